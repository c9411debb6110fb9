import { existsSync } from 'node:fs';
import path from 'node:path';
import { fillPattern, type Config, type OutputConfig, type StepConfig } from '../config/index.js';
import type { InputRow, ItemRow, Ledger } from '../ledger/index.js';
import { nameFromUrl } from './safeName.js';
import { DownloadError } from '../errors.js';

/**
 * Output names (output.layout, output.pattern), and the files a photo's output goes to;
 * what is written beside an output is otherOutputs.ts's.
 *
 * Each name an input goes by gets one output: mirror puts it in the input's folder under
 * output.dir, flat puts every output in output.dir itself (a URL's name may carry folders
 * of its own in mirror). The pattern's {name} is the input's name without extension,
 * {step} the step whose result it is, {ext} the result's real type (background removal
 * gives .png whatever the input was).
 *
 * Two names that would give the same file (flat layout, a URL list naming two lines alike,
 * names that differ only in case or Unicode normalisation, which some file systems do not
 * tell apart) are told apart by `~2`, `~3`… on {name}. The choice is made at discovery, in
 * a fixed order (files by path, then URL lines), and kept in the ledger once made: a file
 * added later never renames an output written before. Whether the extension differs does
 * not matter, so the choice never waits for a result's type.
 */

export interface NamingOptions {
  readonly output: OutputConfig;
  readonly steps: readonly StepConfig[];
}

export function namingOptions(config: Config): NamingOptions {
  return { output: config.output, steps: config.steps };
}

/** What {step} becomes for step `i`: its capability, with its number when the pipeline runs it twice. */
export function stepLabel(steps: readonly StepConfig[], i: number): string {
  const s = steps[i];
  if (!s) return 'result';
  const twice = steps.filter((x) => x.capability === s.capability).length > 1;
  return twice ? `${i + 1}-${s.capability}` : s.capability;
}

/** Names given under another layout, pattern or last step are given again (if not yet written). */
function namingSignature(opts: NamingOptions): string {
  return `${opts.output.layout}|${opts.output.pattern}|${stepLabel(opts.steps, opts.steps.length - 1)}`;
}

/** Where an input's output goes before collisions: folder under output.dir ('' = top) and {name}. */
function desiredName(input: Pick<InputRow, 'kind' | 'name'>, layout: OutputConfig['layout']): { dir: string; name: string } {
  const p = path.posix.parse(input.name);
  // A URL's name has no extension left (cleanName in safeName.ts took it off); a dot in it is part of the name.
  const name = input.kind === 'file' ? p.name || p.base : p.base;
  const dir = layout === 'mirror' && p.dir !== '.' ? p.dir : '';
  return { dir, name };
}

/** The path under output.dir of an output, with '/'. `step` defaults to the last one. */
export function relOutputPath(dir: string, name: string, ext: string, opts: NamingOptions, step = opts.steps.length - 1): string {
  const last = step === opts.steps.length - 1;
  // An intermediate of a pattern without {step} gets it before the extension: photo.restore.jpg.
  const pattern =
    last || opts.output.pattern.includes('{step}') ? opts.output.pattern : opts.output.pattern.replace('{ext}', '{step}.{ext}');
  const file = fillPattern(pattern, { name, step: stepLabel(opts.steps, step), ext });
  return dir === '' ? file : `${dir}/${file}`;
}

function collisionKey(dir: string, name: string, opts: NamingOptions): string {
  return relOutputPath(dir, name, '\u0000', opts).normalize('NFC').toLowerCase();
}

/** Which names to give output names to: a discovery's batch, while it goes on, or (by default) every current name still without one. */
export interface NamingPass {
  /** The rows the batch recorded. */
  readonly ids: readonly number[];
  /** The generation of the discovery under way (ledger/inputs.ts): names it saw again hold their output names for sure. */
  readonly gen: number;
}

/**
 * Give names their output names (see the file comment), kept once given under the same
 * naming. The ledger says which keys are taken (`inputs.out_key`), so a discovery that records
 * its photos in batches names each batch as it comes, holding no list of every name. A name
 * whose wanted key is held only by a name this discovery has not seen again yet waits (it is
 * given a `~2` only if that name is still there): the last call, with no `pass`, names every
 * current name left without one, once the discovery is complete.
 */
export function assignOutputNames(
  ledger: Ledger,
  opts: NamingOptions,
  pass?: NamingPass,
): { given: number; renamed: number; waiting: number } {
  const sig = namingSignature(opts);
  const since = pass?.gen ?? ledger.inputs.generation();
  const given: { inputId: number; dir: string; name: string; key: string }[] = [];
  const keyed: { inputId: number; key: string }[] = [];
  const mine = new Set<string>();
  let renamed = 0;
  let waiting = 0;
  let count = 0;
  // 'free', 'taken' (by a name seen by this discovery, or given now), or 'wait' (by one not seen again yet;
  // only while the discovery goes on: once it is complete, a name it did not see is not current).
  const holder = (key: string, id: number): 'free' | 'taken' | 'wait' => {
    if (mine.has(key)) return 'taken';
    const gen = ledger.inputs.keyHolder(key, sig, id);
    return gen === undefined ? 'free' : gen >= since ? 'taken' : 'wait';
  };
  const chunks = pass ? [ledger.inputs.byIds(pass.ids)] : ledger.inputs.unnamed(sig);
  for (const rows of chunks) {
    for (const r of rows) {
      if (r.naming === sig && r.out_dir !== null && r.out_name !== null) {
        // Named before out_key was kept: its key, once.
        if (r.out_key === null) keyed.push({ inputId: r.id, key: collisionKey(r.out_dir, r.out_name, opts) });
        continue;
      }
      const want = desiredName(r, opts.output.layout);
      let name = want.name;
      let key = collisionKey(want.dir, name, opts);
      let h = holder(key, r.id);
      for (let k = 2; h === 'taken'; k++) {
        name = `${want.name}~${k}`;
        key = collisionKey(want.dir, name, opts);
        h = holder(key, r.id);
      }
      if (h === 'wait') {
        waiting++;
        continue;
      }
      if (name !== want.name) renamed++;
      mine.add(key);
      given.push({ inputId: r.id, dir: want.dir, name, key });
    }
    count += given.length;
    ledger.inputs.setOutputNames(given.splice(0), sig);
  }
  ledger.inputs.setOutputKeys(keyed);
  return { given: count, renamed, waiting };
}

export interface OutputTarget {
  /** The input this output is for; null for an item with no recorded names (a version-1 ledger). */
  readonly input: InputRow | null;
  readonly dir: string;
  readonly name: string;
  /** Absolute path of the final output. */
  readonly path: string;
}

export const DEFAULT_OUTPUT: OutputConfig = {
  dir: '',
  layout: 'mirror',
  pattern: '{name}.{ext}',
  keepIntermediates: false,
  metadata: 'none',
  sidecar: { json: false, xmp: false },
};

/**
 * Every output of a finished photo, the first one being the item's own (its label's). An
 * item with no names recorded is named from its label, as before identities existed.
 */
export function outputTargets(ledger: Ledger, item: ItemRow, ext: string, outputDir: string, naming?: NamingOptions): OutputTarget[] {
  const opts = naming ?? { output: DEFAULT_OUTPUT, steps: [] };
  const inputs = ledger.inputs.inputsOf(item.id).filter((r) => r.content_hash === item.content_hash || item.content_hash === null);
  const primary = inputs.findIndex((r) => (r.kind === 'url' ? r.src : r.name) === item.rel_path);
  if (primary > 0) inputs.unshift(...inputs.splice(primary, 1));
  const list =
    inputs.length > 0
      ? inputs.map((r) => {
          const want = desiredName(r, opts.output.layout);
          return { input: r, dir: r.out_dir ?? want.dir, name: r.out_name ?? want.name };
        })
      : [{ input: null, ...fallbackName(item, opts.output.layout) }];
  return list.map((t) => ({ ...t, path: inside(outputDir, relOutputPath(t.dir, t.name, ext, opts), item.rel_path) }));
}

function fallbackName(item: ItemRow, layout: OutputConfig['layout']): { dir: string; name: string } {
  if (item.content_hash?.startsWith('url:') || /^https?:\/\//.test(item.rel_path)) {
    return { dir: '', name: nameFromUrl(item.src_path) };
  }
  return desiredName({ kind: 'file', name: item.rel_path }, layout);
}

/** An absolute path under outputDir, refusing any that would leave it (also outputPaths.ts, before the upload). */
export function inside(outputDir: string, rel: string, shown: string): string {
  const target = path.resolve(outputDir, ...rel.split('/'));
  const back = path.relative(path.resolve(outputDir), target);
  if (back === '' || back.startsWith('..') || path.isAbsolute(back)) {
    throw new DownloadError('OUTPUT_ESCAPE', `output path for ${shown} would leave the output folder`, true);
  }
  return target;
}

/** Refuse, before anything is written, to overwrite a file darkroom did not write. */
export function checkTargets(ledger: Ledger, item: ItemRow, targets: readonly OutputTarget[]): void {
  for (const t of targets) {
    if (!existsSync(t.path)) continue;
    const f = ledger.outputFiles.fileAt(t.path);
    if (f === undefined && !ledger.outputFiles.isOwnFile(t.path)) {
      throw new DownloadError(
        'OUTPUT_EXISTS',
        `${t.path} already exists and was not written by this ledger; move it away and run again`,
        true,
      );
    }
    if (f !== undefined && f.kind !== 'output') {
      throw new DownloadError(
        'OUTPUT_TAKEN',
        `${t.path} holds an intermediate or sidecar darkroom wrote for another output; rename the input ${item.rel_path}`,
        true,
      );
    }
  }
}
