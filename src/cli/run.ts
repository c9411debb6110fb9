import path from 'node:path';
import type { Transport } from '../api/index.js';
import { clock } from '../clock.js';
import { loadConfig, requireBaseUrl, requireInputDir, resolveKeys } from '../config/index.js';
import { Ledger, ProgressReader, holderId } from '../ledger/index.js';
import { fileLogger, type Logger } from '../log.js';
import { hiddenLine } from '../inputs/hidden.js';
import { runJob, type RunResult } from '../run/runner.js';
import { ServiceContact } from '../run/serviceContact.js';
import { LiveProgress, type TtyStream } from '../progress/live.js';
import { buildProgress } from '../progress/snapshot.js';
import { formatStatus } from './format.js';
import { nextStepLines, shellArg } from './nextSteps.js';
import type { Display } from './screen.js';
import { rescueLines } from './rescue.js';
import { stepsChangeLines } from './stepsChange.js';
import { guardLimitsFrom, type GuardArgs } from './guardOptions.js';
import type { RunEvent } from '../run/events.js';
import { stateDirFrom } from './stateDir.js';
import { accountStopLines } from './stops.js';

export interface RunArgs {
  readonly jobs: string;
  readonly ledger?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly quiet?: boolean | undefined;
  /** `--break-lock HOST:PID`: take over the lock of a run on another host known to be gone. */
  readonly breakLock?: string | undefined;
  /** Redo photos started under other steps than the job's, from the first step (see run/stepsCheck.ts). */
  readonly redoSteps?: boolean | undefined;
  /** Spending guards: --max-photos, --max-credits, --max-duration, --until (guardOptions.ts). */
  readonly guards?: GuardArgs;
}

export interface RunIo {
  readonly env: NodeJS.ProcessEnv;
  readonly stderr: (line: string) => void;
  readonly signal?: AbortSignal;
  readonly transport?: Transport;
  /**
   * How progress is shown: 'tty' redraws rows on `stream` (a terminal), 'lines' prints one
   * summary line a minute through `stderr` (no terminal, or --quiet). Default 'lines'.
   */
  readonly progress?: { readonly mode: 'tty' | 'lines'; readonly stream?: TtyStream; readonly color?: boolean };
  /** Every event of the run (`--json` writes them on stdout); the progress display is drawn from the same stream. */
  readonly onEvent?: (e: RunEvent) => void;
  /** The CLI's stderr (src/cli/screen.ts): while the live rows are drawn, every line goes through them. */
  readonly screen?: { attach(d: Display): () => void };
}

export interface RunOutcome {
  readonly exitCode: number;
  readonly report: string;
  readonly result: RunResult;
  readonly outputDir: string;
}

/** `darkroom run <jobs.yaml>`: everything checked before the first call, then the job to its end. */
export async function runCommand(args: RunArgs, io: RunIo): Promise<RunOutcome> {
  const config = loadConfig(args.jobs, { baseUrl: args.baseUrl, ledger: args.ledger, env: io.env });
  requireInputDir(config);
  const baseUrl = requireBaseUrl(config);
  const keys = resolveKeys(config, io.env);
  const guards = guardLimitsFrom(args.guards ?? {}, config.limits.maxCredits, clock.now());
  const open: { ledger?: Ledger; reader?: ProgressReader; log?: Logger } = {};
  // Released in `finally`; a second interrupt exits at once (process.exit), and this
  // releases it on the way out (better-sqlite3 is synchronous). After kill -9 the next run
  // finds this process gone and takes the lock over.
  let release = () => {};
  try {
    const ledger = (open.ledger = Ledger.open(config.ledger));
    // L6: before anything writes, recover() above all (it marks `sending` creates ambiguous).
    const lock = ledger.acquireRunLock({ command: 'run', breakLock: args.breakLock });
    release = lock.release;
    process.once('exit', release);
    // The display reads through a connection of its own, as `status` would (WAL).
    const reader = (open.reader = ProgressReader.open(config.ledger));
    const live = new LiveProgress({
      mode: io.progress?.mode ?? 'lines',
      ...(io.progress?.stream ? { stream: io.progress.stream } : {}),
      line: io.stderr,
      color: io.progress?.color ?? false,
      title: path.basename(config.file),
      read: () => {
        const now = clock.now();
        const p = buildProgress(reader.read(now), { now, steps: config.steps, limits: config.limits, keys: keys.map((k) => k.fingerprint) });
        return { ...p, service: contact.outage() };
      },
    });
    const log = (open.log = fileLogger(config.log.file, config.log.level, {
      secrets: keys.map((k) => k.key),
      human: (line) => live.log(line),
      humanHint: config.log.file,
      // Warnings name the photo by its input path, not its row number.
      itemName: (id) => ledger.items.get(id)?.rel_path,
    }));
    // Whether the service answers: the display counts down to the next try during an outage.
    const contact = new ServiceContact(Math.random, log);
    if (!args.quiet) io.stderr(`darkroom: running ${config.file} against ${new URL(baseUrl).origin} with ${keys.length} key(s); ledger ${config.ledger}`);
    if (lock.replaced) {
      const r = lock.replaced;
      log.warn({ pid: r.pid, host: r.host, command: r.command, startedMs: r.startedMs }, `took over the ledger lock left by darkroom ${r.command} ${holderId(r)} (no longer running, or --break-lock)`);
    }
    live.start();
    const detach = live.active ? io.screen?.attach(live) : undefined;
    let result: RunResult;
    try {
      result = await runJob({
        config,
        baseUrl,
        keys,
        ledger,
        log,
        stateDir: stateDirFrom(io.env),
        serviceContact: contact,
        guards,
        onEvent: (e) => {
          live.poke();
          io.onEvent?.(e);
        },
        onActivity: () => live.poke(),
        ...(args.redoSteps ? { redoSteps: true } : {}),
        ...(io.signal ? { signal: io.signal } : {}),
        ...(io.transport ? { transport: io.transport } : {}),
      });
    } finally {
      detach?.();
      live.stop();
    }
    const lines = [formatStatus(result.status, config.ledger, config.limits, args.jobs)];
    if (result.recovered.ambiguous > 0) {
      lines.push(`note: ${result.recovered.ambiguous} create(s) were in flight when an earlier run stopped; their photos are held (see above)`);
    }
    const hidden = hiddenLine(result.discovered.hidden);
    if (hidden !== null) lines.push(`note: ${hidden}`);
    if (result.halt) lines.push(`stopped: ${result.halt.message}`);
    if (result.halt?.kind === 'ledger') lines.push(...rescueLines(ledger.rescueIfDeleted(), config.ledger));
    if (result.stepsChange && result.stepsChange.outcome !== 'bound') lines.push(...stepsChangeLines(result.stepsChange));
    lines.push(...accountStopLines(result, config.keyEnvs));
    if (result.interrupted) lines.push(`interrupted: run \`darkroom run ${shellArg(args.jobs)}\` again to continue where this one stopped`);
    lines.push(...nextStepLines(result, args.jobs));
    return { exitCode: result.exitCode, report: lines.join('\n'), result, outputDir: config.output.dir };
  } finally {
    open.log?.flush();
    open.reader?.close();
    process.off('exit', release);
    release();
    open.ledger?.close();
  }
}
