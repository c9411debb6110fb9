import path from 'node:path';
import { clock } from '../../clock.js';
import { loadConfig, requireBaseUrl, requireInputDir, resolveKeys } from '../../config/index.js';
import { ProgressReader } from '../../ledger/index.js';
import { hiddenLine } from '../../inputs/hidden.js';
import type { RunHooks, RunRequest, RunResult, RunSeams } from '../../run/context.js';
import { runSession } from '../../lib/session.js';
import { LiveProgress, type TtyStream } from '../../progress/live.js';
import { buildProgress } from '../../progress/snapshot.js';
import { formatStatus } from './format.js';
import { nextStepLines, shellArg } from './nextSteps.js';
import { rescueLines } from './rescue.js';
import { stepsChangeLines } from './stepsChange.js';
import { guardLimitsFrom, type GuardArgs } from './guards.js';
import { stateDirFrom } from '../../lib/stateDir.js';
import { guessedSlotsOf, keyUseOf } from '../../lib/status.js';
import { accountStopLines } from './stops.js';

/** What the CLI's screen needs of a live display (src/progress/live.ts), to route every line through it while it draws. */
export interface Display {
  /** True while it draws: then it owns the terminal. */
  readonly active: boolean;
  /** A line printed above the rows, whole. */
  log(line: string): void;
  /** Last frame left on screen, cursor and line wrapping given back. */
  stop(): void;
}

/** The command line's options: the run's own (RunRequest) as flags, and what the CLI adds. */
export interface RunArgs extends Pick<RunRequest, 'breakLock' | 'redoSteps' | 'follow'> {
  readonly jobs: string;
  readonly ledger?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly quiet?: boolean | undefined;
  /** Spending guards: --max-photos, --max-credits, --max-duration, --until (guardOptions.ts). */
  readonly guards?: GuardArgs;
}

/** What the CLI gives a run besides its flags: the hooks every run takes (RunHooks), the environment, the terminal. */
export interface RunIo extends RunHooks, Pick<RunSeams, 'transport'> {
  readonly env: NodeJS.ProcessEnv;
  readonly stderr: (line: string) => void;
  /**
   * How progress is shown: 'tty' redraws rows on `stream` (a terminal), 'lines' prints one
   * summary line a minute through `stderr` (no terminal, or --quiet). Default 'lines'.
   */
  readonly progress?: { readonly mode: 'tty' | 'lines'; readonly stream?: TtyStream; readonly color?: boolean };
  /**
   * Given the ledger lock's release once it is held; returns what undoes it. The CLI hooks
   * the release to the process's exit, so a second Ctrl-C (an immediate exit) lets go of it.
   */
  readonly onLockHeld?: (release: () => void) => () => void;
  /** The CLI's stderr (src/cli/screen.ts): while the live rows are drawn, every line goes through them. */
  readonly screen?: { attach(d: Display): () => void };
}

/** The run's result, and its text: what the CLI prints of it. */
export interface RunOutcome {
  readonly result: RunResult;
  /** For stdout: the figures and what to do next. */
  readonly report: string;
  /** Why the run stopped, was interrupted, or what it left out, for stderr (where a cron job's mail looks); empty when none. */
  readonly problems: string;
  readonly outputDir: string;
}

/** `darkroom run <jobs.yaml>`: everything checked before the first call, then the job to its end. */
export async function runCommand(args: RunArgs, io: RunIo): Promise<RunOutcome> {
  const config = loadConfig(args.jobs, { baseUrl: args.baseUrl, ledger: args.ledger, env: io.env });
  requireInputDir(config);
  const baseUrl = requireBaseUrl(config);
  const keys = resolveKeys(config, io.env);
  const guards = guardLimitsFrom(args.guards ?? {}, config.limits.maxCredits, clock.now());
  // The display reads through a connection of its own, as `status` would (WAL); made once the ledger is locked.
  let live: LiveProgress | undefined;
  let reader: ProgressReader | undefined;
  let result: RunResult;
  try {
    result = await runSession({
      config,
      baseUrl,
      keys,
      stateDir: stateDirFrom(io.env),
      env: io.env,
      human: (line) => (live ? live.log(line) : io.stderr(line)),
      guards,
      breakLock: args.breakLock,
      redoSteps: args.redoSteps,
      follow: args.follow,
      signal: io.signal,
      seams: { transport: io.transport },
      onEvent: (e) => {
        live?.poke();
        io.onEvent?.(e);
      },
      onActivity: () => live?.poke(),
      onStart: ({ contact, supply, release }) => {
        // A second interrupt exits at once: the CLI releases the lock on the way out
        // (better-sqlite3 is synchronous).
        const unhook = io.onLockHeld?.(release);
        const r = (reader = ProgressReader.open(config.ledger));
        // The id the run owns its calls and slots by in the keys' stores (a new ledger's is set once the run has begun).
        let owner: string | null = null;
        const l = (live = new LiveProgress({
          mode: io.progress?.mode ?? 'lines',
          ...(io.progress?.stream ? { stream: io.progress.stream } : {}),
          line: io.stderr,
          color: io.progress?.color ?? false,
          title: path.basename(config.file),
          read: () => {
            const now = clock.now();
            const fps = keys.map((k) => k.fingerprint);
            const dir = stateDirFrom(io.env);
            const guessedSlots = guessedSlotsOf(dir, fps, now);
            owner ??= r.ownerId();
            const keyUse = keyUseOf(dir, fps, now, owner);
            const following = args.follow ? r.following() : undefined;
            const p = buildProgress(r.read(now), {
              now,
              steps: config.steps,
              limits: config.limits,
              keys: fps,
              guessedSlots,
              keyUse,
              ...(following ? { following } : {}),
            });
            // Whether the service answers: the display counts down to the next try during an outage;
            // and while the discovery walks the folder, how many photos it has found (the total grows meanwhile).
            return { ...p, service: contact.outage(), discovery: supply.walking ? { found: supply.found } : null };
          },
        }));
        if (!args.quiet)
          io.stderr(
            `darkroom: running ${config.file} against ${new URL(baseUrl).origin} with ${keys.length} key(s); ledger ${config.ledger}`,
          );
        l.start();
        const detach = l.active ? io.screen?.attach(l) : undefined;
        return () => {
          detach?.();
          l.stop();
          unhook?.();
        };
      },
    });
  } finally {
    reader?.close();
  }
  const { rescue } = result;
  const lines = [formatStatus(result.status, config.ledger, config.limits, args.jobs), ...nextStepLines(result, args.jobs)];
  const problems: string[] = [];
  if (result.recovered.ambiguous > 0) {
    problems.push(
      `note: ${result.recovered.ambiguous} create(s) were in flight when an earlier run stopped; their photos are held (see darkroom status)`,
    );
  }
  const hidden = hiddenLine(result.discovered.hidden);
  if (hidden !== null) problems.push(`note: ${hidden}`);
  if (result.halt) problems.push(`stopped: ${result.halt.message}`);
  if (result.halt?.kind === 'ledger') problems.push(...rescueLines(rescue, config.ledger));
  // A redo that was asked for is a result; steps that changed under a run that refused are why it stopped.
  if (result.stepsChange?.outcome === 'redone') lines.splice(1, 0, ...stepsChangeLines(result.stepsChange));
  else if (result.stepsChange && result.stepsChange.outcome !== 'bound') problems.push(...stepsChangeLines(result.stepsChange));
  problems.push(...accountStopLines(result, config.keyEnvs));
  if (result.interrupted)
    problems.push(`interrupted: run \`darkroom run ${shellArg(args.jobs)}\` again to continue where this one stopped`);
  return { result, report: lines.join('\n'), problems: problems.join('\n'), outputDir: config.output.dir };
}
