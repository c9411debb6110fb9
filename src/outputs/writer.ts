import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/index.js';
import { crashPoint, type FileMetadata, type ItemRow, type Ledger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { DARKROOM_AGENT } from '../metadata/agent.js';
import { MetadataWriter } from '../metadata/writer.js';
import { copyAtomically, sweepTempFiles, writeBufferAtomically, writeStreamAtomically, type BodySource } from './atomic.js';
import { checkOutputSpace, probeOutputFolder } from './diskcheck.js';
import { carryStreamed, metadataNoteLine, NO_METADATA, type MetadataOptions } from './metadata.js';
import {
  assignOutputNames,
  checkTargets,
  namingOptions,
  outputTargets,
  type NamingOptions,
  type NamingPass,
  type OutputTarget,
} from './naming.js';
import { writeOtherOutputs, writeOutputsOfDone, type Placement, type WrittenResult } from './otherOutputs.js';
import { retireGoneNames } from './goneNames.js';
import type { OutputFs } from './outputfs.js';
import { writeSplicedAtomically } from './splice.js';
import { skipUnwritableBeforeCreate } from './outputPaths.js';
import { DownloadError, ExifToolUnavailable } from '../errors.js';

/** What the output writer did after a discovery (logged with what the discovery found). */
export interface AfterDiscovery {
  /** Outputs given to new names of photos already done, copied from one already written. */
  readonly copied: number;
  /** New names of done photos left without an output (none to copy from, or a file in the way). */
  readonly missing: readonly string[];
  /** Files of names gone since, removed (their photo's output lives on under a current name). */
  readonly retired: number;
  /** Photos skipped before their first create: their outputs could not be written. */
  readonly unwritable: number;
}

/** A result as the download stage opened it: its type from its first bytes, its body to be read once. */
export interface Fetched extends BodySource {
  readonly ext: string;
}

/** A photo's first output as written, and the outputs its names get (the first is its own). */
export interface FirstOutput {
  readonly targets: readonly OutputTarget[];
  readonly result: WrittenResult;
}

/** Fetch a result URL and hand its opened body to `place` (the download stage's, for intermediates). */
export type FetchInto = (url: string, place: (ext: string) => Placement) => Promise<WrittenResult | null>;

/** What a run's output writer is made with besides the job: the seams a test or the benchmark sets. */
export interface OutputWriterOptions {
  /** The environment perl is looked for in (its PATH), for ExifTool; the process's by default. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** ExifTool already started (a benchmark running many jobs): used and left running. */
  readonly metadataWriter?: MetadataWriter | undefined;
  /** The file-system calls that write outputs (outputfs.ts); tests inject a full or read-only disk. */
  readonly fs?: OutputFs | undefined;
}

/**
 * The only code that writes into output.dir (§ L4): the outputs' names, each result's
 * atomic write with its input's metadata, the other names of a duplicate, intermediates and
 * sidecars, the outputs of names found after their photo was done, the temp files a killed
 * run left and the files of photos redone under new steps. Discovery only finds and
 * reconciles inputs; the download stage only fetches, and hands the result here.
 */
export class OutputWriter {
  readonly dir: string;
  readonly naming: NamingOptions;
  readonly fs: OutputFs | undefined;
  #metadata: MetadataOptions | undefined;
  #ownTool: MetadataWriter | null = null;
  /** The sweep of a killed run's temp files (sweepTemp): every write waits for it. */
  #swept: Promise<number> = Promise.resolve(0);
  #sweptCount = 0;

  constructor(
    private readonly config: Config,
    private readonly ledger: Ledger,
    private readonly log: Logger,
    private readonly o: OutputWriterOptions = {},
  ) {
    this.dir = config.output.dir;
    this.naming = namingOptions(config);
    this.fs = o.fs;
  }

  /** The input's metadata on the outputs and the XMP sidecars; undefined until started, or when ExifTool could not start (the run halts). */
  get metadata(): MetadataOptions | undefined {
    return this.#metadata;
  }

  /**
   * ExifTool for the outputs' metadata and the XMP sidecars, started when the job asks for
   * either (one handed in is used as it is). When it cannot start: why and what to do (the
   * run halts before any call, exit 2); else null.
   */
  async startMetadata(): Promise<string | null> {
    const { config, log } = this;
    const wanted = config.output.metadata !== 'none' || config.output.sidecar.xmp;
    const base = {
      level: config.output.metadata,
      xmpSidecar: config.output.sidecar.xmp,
      aiSystem: config.serviceName ?? 'unknown',
      agent: DARKROOM_AGENT,
    };
    if (!wanted || this.o.metadataWriter) {
      this.#metadata = { ...base, writer: wanted ? this.o.metadataWriter! : null };
      return null;
    }
    const tool = new MetadataWriter({ env: this.o.env });
    try {
      const version = await tool.start();
      log.debug({ exiftool: version }, 'ExifTool started');
      this.#metadata = { ...base, writer: tool };
      this.#ownTool = tool;
      return null;
    } catch (err) {
      await tool.end().catch(() => undefined);
      const problem = metadataToolMessage(config, err);
      // In the log file; the operator's one line is the halt's `stopped:` (on stderr).
      log.info({ code: 'METADATA_TOOL' }, problem);
      return problem;
    }
  }

  /** Ends the ExifTool this writer started (one handed in is left running), once the temp files' sweep is over. */
  async end(): Promise<void> {
    await this.#swept.catch(() => 0);
    await this.#ownTool?.end();
  }

  /**
   * A result whose body is being read (the download stage's fetch): every name of the photo
   * gets an output (naming.ts); the first, the item's own, is claimed in the ledger and
   * written here, streamed to a temp file, the input's metadata carried onto it, renamed
   * into place (atomic.ts, § L4). `at.item` follows the photo's row as it is claimed.
   */
  async writeFirst(at: { item: ItemRow }, r: Fetched): Promise<FirstOutput> {
    await this.#swept;
    const { ledger } = this;
    const targets = outputTargets(ledger, at.item, r.ext, this.dir, this.naming);
    const target = targets[0]!.path;
    checkTargets(ledger, at.item, targets.slice(1));
    at.item = ledger.outputFiles.adoptOutput(at.item, target);
    const taken = (owner: { readonly rel_path: string }) =>
      new DownloadError(
        'OUTPUT_TAKEN',
        `${target} is the output of ${owner.rel_path} already (two inputs differ only in their extension); rename one of them and run again`,
        true,
      );
    const owner = ledger.outputs.ownerOf(target);
    if (owner !== undefined && owner.id !== at.item.id) throw taken(owner);
    if (owner === undefined && existsSync(target)) {
      throw new DownloadError(
        'OUTPUT_EXISTS',
        `${target} already exists and was not written by this ledger; move it away and run again`,
        true,
      );
    }
    // Claimed before the rename: a crash between the rename and `done` leaves a file this
    // item owns, which the next run overwrites with the same bytes instead of refusing.
    // The claim is one guarded statement, so two downloads racing for a path cannot both win.
    const rival = ledger.outputs.claim(at.item, target);
    if (rival !== undefined) throw taken(rival);
    at.item = { ...at.item, output_path: target };
    let meta: FileMetadata = NO_METADATA;
    const last = Math.max(0, this.naming.steps.length - 1);
    const m = this.#metadata;
    const { finalize, splice } = m
      ? carryStreamed(m, ledger, at.item, targets[0]!, r.ext, last, this.naming, (x) => (meta = x), this.fs, this.log)
      : {};
    const write = { fs: this.fs, ...(finalize ? { finalize } : {}) };
    const facts = splice
      ? await writeSplicedAtomically(target, r, this.dir, { ...write, splice })
      : await writeStreamAtomically(target, r, this.dir, write);
    crashPoint('output');
    if (meta.note !== null) this.log.warn({ item: at.item.id, file: target }, metadataNoteLine(meta));
    const result: WrittenResult = {
      path: target,
      bytes: facts.bytes,
      facts,
      ext: r.ext,
      meta,
      ...(r.rest === null && meta.level === 'none' ? { data: r.head } : {}),
    };
    return { targets, result };
  }

  /**
   * Everything a finished photo gets besides its first output: the outputs of its other
   * names, the kept intermediates (`fetch` gets their results), the sidecars (otherOutputs.ts).
   */
  async writeOthers(item: ItemRow, first: FirstOutput, fetch: FetchInto): Promise<void> {
    const write = { fs: this.fs };
    await writeOtherOutputs(this.ledger, item, first.result, first.targets, {
      outputDir: this.dir,
      naming: this.naming,
      metadata: this.#metadata,
      fs: this.fs,
      log: this.log,
      write: (t, b) => writeBufferAtomically(t, b, this.dir, write),
      copy: (t, from, w) =>
        from.data
          ? writeBufferAtomically(t, from.data, this.dir, { ...write, ...w })
          : copyAtomically(from.path, t, this.dir, { ...write, ...w }),
      download: fetch,
    });
  }

  /**
   * An intermediate's result (its body being read): straight into the file `place` names once
   * its type is known (null: not wanted, dropped unread), checked and streamed as the final
   * result is.
   */
  async writePlaced(r: Fetched, place: (ext: string) => Placement): Promise<WrittenResult | null> {
    await this.#swept;
    const where = place(r.ext);
    if (where === null) return null;
    const write = { ...(this.fs ? { fs: this.fs } : {}), ...where.write };
    const facts = where.splice
      ? await writeSplicedAtomically(where.target, r, this.dir, { ...write, splice: where.splice })
      : await writeStreamAtomically(where.target, r, this.dir, write);
    // The metadata the file carries is its placement's to record; `data` only when the file is the service's bytes.
    return {
      path: where.target,
      bytes: facts.bytes,
      facts,
      ext: r.ext,
      meta: NO_METADATA,
      ...(r.rest === null && !where.write.finalize ? { data: r.head } : {}),
    };
  }

  /** Whether the output folder can take a file at all, before anything is paid for: null, or why not. */
  probe(): string | null {
    return probeOutputFolder(this.dir, this.fs);
  }

  /**
   * The temp files a killed run left in the output folder, removed beside the run's start
   * (atomic.ts sweepTempFiles): nothing is written into the folder until it is over.
   */
  sweepTemp(): void {
    this.#swept = sweepTempFiles(this.dir).then((n) => (this.#sweptCount = n));
  }

  /** How many temp files the sweep removed, once it is over. */
  async swept(): Promise<number> {
    await this.#swept;
    return this.#sweptCount;
  }

  /** Whether the disk has room for the results still to come (diskcheck.ts): null, or why not. */
  spaceProblem(): string | null {
    return checkOutputSpace(this.dir, this.ledger.outputs.spaceFacts(), this.config, this.fs);
  }

  /** Before a discovery records anything: what `darkroom manifest` needs of the job, with the ledger alone. */
  beginDiscovery(): void {
    this.ledger.setMeta('pipeline', JSON.stringify(this.config.steps.map((s) => s.capability)));
    // Where the outputs go, for `darkroom manifest` run with the ledger alone.
    this.ledger.setMeta('output.dir', this.dir);
  }

  /**
   * After each batch a discovery records, before the lanes may take its photos: its names
   * get their outputs' names (naming.ts), and photos whose outputs could not be written are
   * skipped before their first create. The number skipped so.
   */
  afterBatch(pass: NamingPass): number {
    assignOutputNames(this.ledger, this.naming, pass);
    return skipUnwritableBeforeCreate(this.ledger, this.config, this.log);
  }

  /**
   * After a whole discovery: names that waited for it get their outputs' names, new names of
   * photos already done get their outputs from one already written, the files of names gone
   * since are retired (goneNames.ts), and photos whose outputs could not be written are
   * skipped before their first create.
   */
  async afterDiscovery(): Promise<AfterDiscovery> {
    await this.#swept;
    assignOutputNames(this.ledger, this.naming);
    const { copied, missing } = await this.copyToNewNames();
    // Only once every new name has its output: the old names' files are retired in exchange (goneNames.ts).
    const retired = await this.retireGoneNames();
    const unwritable = skipUnwritableBeforeCreate(this.ledger, this.config, this.log);
    return { copied, missing, retired, unwritable };
  }

  /** The files of names gone since they were written, of done photos (or of one as it is done): goneNames.ts. */
  retireGoneNames(itemId?: number): Promise<number> {
    return retireGoneNames(this.ledger, this.log, this.fs, itemId);
  }

  /**
   * New names of photos already done get their outputs from one already written
   * (otherOutputs.ts): every current name's, or only those of `inputIds` (a batch a followed
   * folder brought: a copy dropped in of a photo done before).
   */
  copyToNewNames(inputIds?: readonly number[]): Promise<{ copied: number; missing: string[] }> {
    return writeOutputsOfDone(
      this.ledger,
      {
        outputDir: this.dir,
        naming: this.naming,
        metadata: this.#metadata,
        write: (target, bytes) => writeBufferAtomically(target, bytes, this.dir),
        copy: (target, from, w) => copyAtomically(from.path, target, this.dir, w),
        log: this.log,
      },
      inputIds,
    );
  }

  /**
   * A photo redone under new steps (`--redo-steps`) keeps its old output until the new one is
   * in place; then every file darkroom wrote for it under the old steps that the new output
   * did not overwrite (another extension or name, an old intermediate or sidecar) is removed,
   * so what is on disk comes from one step list. Only files the ledger records as darkroom's
   * are touched. Run per photo as it is done, and over the ledger at the start of a run (a
   * run killed between the two leaves some behind).
   */
  retireStale(itemId?: number): number {
    let removed = 0;
    for (const f of this.ledger.steps.staleFiles(itemId)) {
      try {
        rmSync(f.path, { force: true });
      } catch (err) {
        this.log.warn(
          { item: f.itemId, code: (err as NodeJS.ErrnoException).code },
          `could not remove ${f.path}, made under earlier steps: ${(err as Error).message}`,
        );
        continue;
      }
      this.ledger.steps.forgetFile(f.path);
      this.log.info(
        { item: f.itemId, kind: f.kind },
        `removed ${f.path}: made under earlier steps, replaced by the output of the current ones`,
      );
      removed++;
    }
    return removed;
  }
}

/** Why ExifTool cannot run, and the two ways on: install perl, or ask for nothing ExifTool writes. */
function metadataToolMessage(config: Config, err: unknown): string {
  const why = err instanceof Error ? err.message : String(err);
  const fix = err instanceof ExifToolUnavailable ? err.fix : 'install perl';
  const off = [
    config.output.metadata !== 'none' ? 'output.metadata: none' : null,
    config.output.sidecar.xmp ? 'output.sidecar without xmp' : null,
  ]
    .filter(Boolean)
    .join(' and ');
  return `cannot carry the photos' metadata: ${why}; ${fix}, or set ${off} in ${path.basename(config.file)} to write outputs without it; nothing was uploaded`;
}
