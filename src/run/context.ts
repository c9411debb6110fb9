import type { ApiClient, Transport } from '../api/index.js';
import type { Config, ResolvedKey } from '../config/index.js';
import type { KeyStore } from '../keystore/store.js';
import type { ExitCode, RunSummary } from '../errors.js';
import type { Ledger, LedgerStatus, RecoveryReport, Rescue } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { MetadataWriter } from '../metadata/writer.js';
import type { OutputFs } from '../outputs/outputfs.js';
import type { OutputWriter } from '../outputs/writer.js';
import type { KeyBudget } from '../scheduler/budget/keyBudget.js';
import type { PollPlanner } from '../scheduler/polling/polling.js';
import type { AccountStop, RunControl, RunHalt } from './control.js';
import type { CreditsShortfall } from './credits.js';
import type { RunEvent, RunEvents } from './events.js';
import type { GuardLimits, Guards, GuardTrip } from './guards.js';
import type { ServiceContact } from './serviceContact.js';
import type { PhotoSupply } from './supply.js';
import type { StepsChange } from './stepsCheck.js';
import type { ResultFetch } from './stages/result.js';
import type { watchFolder } from '../inputs/follow/watch.js';

/*
 * The run's options pass through two types: a RunRequest (what starts one run, the same from
 * the library's `run()` and from `darkroom run`), and inside the run a RunContext, which each
 * key's part extends (KeyContext: its client, budget and poll timing). Nothing else is handed
 * from phase to phase or to the stages.
 */

/**
 * What every run is given by whoever starts it, the same from `run()` and `darkroom run`:
 * the public `RunOptions` (lib/run.ts) extends it.
 */
export interface RunHooks {
  /**
   * Aborting it stops the run: no new call is started, calls in flight get 2 s to finish
   * and are then aborted with their outcome recorded, and `run()` resolves within seconds
   * with the figures so far (`interrupted: true`, `pending` > 0). The ledger stays
   * consistent; a later `run()` continues where this one stopped. Any number of runs may
   * share one signal: a run adds no listener to it.
   */
  readonly signal?: AbortSignal | undefined;
  /**
   * Each event of the run as it happens, the same as `darkroom run --json` writes: one per
   * photo that ends (`done`, `failed`, `held`, `skipped`), `limit`, and `summary` last.
   * Called synchronously: keep it quick.
   *
   * If it throws, darkroom never lets the exception escape (no unhandled rejection, no
   * uncaught exception): its first throw stops the run as aborting `signal` would — nothing
   * new is started, the calls in flight finish and are recorded, the ledger stays
   * consistent — no further event reaches it, and `run()` rejects with a `RunStoppedError`
   * of code `EVENT_HANDLER`: its `cause` is what the handler threw, its `summary` the
   * figures when the run stopped (a throw on `summary` itself: the run's own figures). A
   * later `run()` continues where this one stopped.
   */
  readonly onEvent?: ((e: RunEvent) => void) | undefined;
  /**
   * Keep going after the photos already there: input.dir is watched (and the URL list looked
   * at) and each new photo is taken once it is whole (input.settle, a full decode), until the
   * run is stopped: `signal`, a spending guard, an account stop. An idle folder is not an end.
   */
  readonly follow?: boolean | undefined;
}

/**
 * What each of those may replace of what a real run makes itself; tests and the benchmark
 * set them, `darkroom run` and `run()` never do.
 */
export interface RunSeams {
  /** The in-process simulator's transport for deterministic simulations; undici otherwise. */
  readonly transport?: Transport | undefined;
  /** How result URLs are fetched (the in-process simulator's, in simulations). */
  readonly resultFetch?: ResultFetch | undefined;
  /** The run's jitter; Math.random by default, seeded in simulations. */
  readonly random?: (() => number) | undefined;
  /**
   * After the signal aborts, how long calls and downloads in flight may take to finish
   * before they are aborted too (their outcome is recorded either way). Default 2000 ms,
   * so an interrupted run exits well within 5 s.
   */
  readonly graceMs?: number | undefined;
  /** A whole download's deadline; default 5 min. */
  readonly downloadDeadlineMs?: number | undefined;
  /** The file-system calls that write outputs (src/outputs/outputfs.ts); tests inject a full or read-only disk. */
  readonly outputFs?: OutputFs | undefined;
  /** How long the first contact may go unanswered before the run stops (exit 2); default 20 s. */
  readonly firstContactMs?: number | undefined;
  /**
   * ExifTool already started, for the outputs' metadata (a benchmark or a test running many
   * jobs): the run uses it and leaves it running. By default a run starts its own when the
   * job asks for metadata or XMP sidecars, and ends it.
   */
  readonly metadataWriter?: MetadataWriter | undefined;
  /**
   * How a followed folder is watched (`follow`): chokidar by default; a simulation names the
   * files it writes itself, at moments of the virtual clock.
   */
  readonly watchFolder?: typeof watchFolder | undefined;
  /** Key stores the caller opened, by key fingerprint (tests: two runs sharing one store). */
  readonly keyStores?: ReadonlyMap<string, KeyStore> | undefined;
}

/** What starts one run: the job resolved, the caller's hooks and flags, and what the session around it needs. */
export interface RunRequest extends RunHooks {
  readonly config: Config;
  readonly baseUrl: string;
  readonly keys: readonly ResolvedKey[];
  /**
   * The state folder with one store per key, `<fingerprint>.db` (the CLI passes
   * DARKROOM_STATE_DIR, else $XDG_STATE_HOME/darkroom, else ~/.local/state/darkroom).
   * Without it (and without `seams.keyStores`), each key gets a private in-memory store: a
   * simulation's, which shares nothing with other processes.
   */
  readonly stateDir?: string | undefined;
  /** Called after every finished action (rate-limited by the caller if it draws). */
  readonly onActivity?: (() => void) | undefined;
  /**
   * `--redo-steps`: photos started under other steps than the job's are redone from the first
   * step (stepsCheck.ts); without it such a run refuses before any call (exit 2).
   */
  readonly redoSteps?: boolean | undefined;
  /** Spending guards (--max-photos, --max-credits / limits.maxCredits, --max-duration, --until): see guards.ts. */
  readonly guards?: GuardLimits | undefined;
  /** The environment perl is looked for in (its PATH), for ExifTool; the process's by default. */
  readonly env?: NodeJS.ProcessEnv | undefined;
  /** The session's (lib/session.ts): the caller's logger; else JSON lines to the job's log file (`log.file`, beside the ledger). */
  readonly logger?: Logger | undefined;
  /** The session's: warnings and errors as short human lines too (the CLI's stderr); only with the default logger. */
  readonly human?: ((line: string) => void) | undefined;
  /** The session's: `--break-lock HOST:PID`. */
  readonly breakLock?: string | undefined;
  /**
   * The session's: called once the ledger is locked and the logger made, before any work: the
   * CLI starts its display here (`contact` says whether the service answers, for an outage's
   * countdown; `supply`, how many photos the discovery has found while it goes on) and hooks
   * the lock's release to the process's exit. The function it returns,
   * if any, is called when the run ends, before the ledger closes.
   */
  readonly onStart?:
    | ((s: {
        readonly ledger: Ledger;
        readonly log: Logger;
        readonly contact: ServiceContact;
        readonly supply: PhotoSupply;
        readonly release: () => void;
      }) => (() => void) | void)
    | undefined;
  readonly seams?: RunSeams | undefined;
}

/** What a run ends with (runner.ts): the ledger's figures, why it stopped, and the exit code. */
export interface RunResult {
  readonly status: LedgerStatus;
  /** hidden: files left out for a name starting with a dot (input.hidden: false); gone: photos whose files disappeared. */
  readonly discovered: {
    readonly added: number;
    readonly known: number;
    readonly skipped: number;
    readonly hidden: number;
    readonly gone: number;
  };
  readonly recovered: RecoveryReport;
  readonly tempFilesSwept: number;
  readonly accountStop: AccountStop | undefined;
  /** Set when the run stopped for a config, disk or ledger problem (its line and exit code). */
  readonly halt: RunHalt | undefined;
  /** Set when the run stopped for insufficient credits (20601). */
  readonly credits?: CreditsShortfall;
  /** Set when photos were started under other steps than the job's: refused, redone or bound. */
  readonly stepsChange?: StepsChange;
  readonly interrupted: boolean;
  /** Set when a spending guard stopped the run (exit 4). */
  readonly guard?: GuardTrip;
  /** Credits this run spent as far as known, when a credit limit was set. */
  readonly creditsSpent?: number;
  /** 0 all done · 1 some failed, held or not yet downloaded · 2 config · 3 account problem · 4 a limit set · 130 interrupted. */
  readonly exitCode: ExitCode;
  /** The figures a caller is given (the library's `run()` resolves with them): the summary event's. */
  readonly summary: RunSummary;
  /** Set when the run stopped because its ledger was deleted: where what it held was saved (ledger/fileCheck.ts). */
  readonly rescue: Rescue | null;
}

/** One run as its phases and stages see it (runner.ts): made by `prepare`, the same object to the end. */
export interface RunContext {
  readonly config: Config;
  readonly baseUrl: string;
  readonly keys: readonly ResolvedKey[];
  readonly ledger: Ledger;
  readonly log: Logger;
  /** The run's stop state: its switches, halts and interrupt (control.ts). */
  readonly control: RunControl;
  /** What the run tells as it goes: photo events, activity (events.ts). */
  readonly events: RunEvents;
  /** The only writer into output.dir (outputs/writer.ts). */
  readonly outputs: OutputWriter;
  /** Whether the service answers (serviceContact.ts). */
  readonly contact: ServiceContact;
  /** Where the run's photos come from while it works: its discovery, batch by batch (supply.ts). */
  readonly supply: PhotoSupply;
  readonly random: () => number;
  /** The request the run was started with (its signal, flags and state folder). */
  readonly request: RunRequest;
  /** The spending guards, once the keys are connected (connect.ts); their gate is asked by every lane. */
  readonly guards?: Guards | undefined;
}

/** One key's part of the run: the run's context with the key's client, budget and poll timing. */
export interface KeyContext extends RunContext {
  readonly keyFp: string;
  /** The key's client; in a stage, bound to the call's reservation in the key's budget. */
  readonly client: ApiClient;
  readonly budget: KeyBudget;
  /** This key's poll timing (and the latency model shared by all keys). */
  readonly polling: PollPlanner;
  /** In a create: into a slot counted busy only by guesses (LaneQueues.createCandidate). */
  readonly probe?: boolean | undefined;
}
