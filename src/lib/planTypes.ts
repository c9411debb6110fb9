import type { Credits, Transport } from '../api/index.js';
import type { Bound } from '../progress/model.js';
import type { StepsChange } from '../run/stepsCheck.js';

/** What `plan` assumes beyond the job (`darkroom plan`'s options). */
export interface PlanOptions {
  /** Mean task latency to assume, seconds, for every step (default: the ledger's, else 20 s). */
  readonly latencyS?: number | undefined;
  /** Share of tasks expected to end FAIL (each is created again): a_s = 1 / (1 − p). Default 0. */
  readonly failRate?: number | undefined;
  /** Credits per image by capability (`--cost restore=1`), over the job's `credits` and the spec's. */
  readonly costs?: Readonly<Record<string, number>> | undefined;
}

export interface PlanIo {
  readonly env: NodeJS.ProcessEnv;
  readonly transport?: Transport | undefined;
  /** Told once when the account check waits for room in the key's windows (src/lib/account.ts). */
  readonly onWait?: ((line: string) => void) | undefined;
}

export interface PlanStep {
  readonly index: number;
  readonly capability: string;
  /** Photos that still have to go through this step. */
  readonly photos: number;
  /** Credits per image: the spec's (enhance, image2image), the config's `credits`, or --cost; null when unknown. */
  readonly creditsPerImage: number | null;
  readonly creditsFrom: 'spec' | 'config' | 'flag' | null;
  /** Mean task latency used for the time bound, ms, and where it came from. */
  readonly latencyMs: number;
  readonly latencyFrom: 'ledger' | 'flag' | 'hint' | 'assumed';
}

export interface PlanResult {
  readonly jobsFile: string;
  readonly ledgerFile: string;
  readonly ledgerExists: boolean;
  readonly inputs: {
    readonly found: number;
    /** Of found: files with the same bytes as another found, the same photo under a second name (no cost of their own). */
    readonly otherNames: number;
    readonly skipped: readonly { readonly path: string; readonly reason: string }[];
    /** Already done in the ledger: nothing to spend. */
    readonly done: number;
    /** In the ledger and not finished: the next run continues them. */
    readonly inProgress: number;
    /** Held or failed in the ledger: not counted as work (they wait for `retry` or a change). */
    readonly held: number;
    readonly failed: number;
    /** New photos plus those in progress. */
    readonly toDo: number;
    /** Files left out because a name on their path starts with a dot (input.hidden: false). */
    readonly hidden: number;
  };
  readonly steps: readonly PlanStep[];
  /** The fewest calls the work needs: one upload per new file, a create and a poll per step attempt. */
  readonly calls: { readonly uploads: number; readonly creates: number; readonly polls: number; readonly total: number };
  /** With the ledger's own calls per step so far, when it has finished a few steps. */
  readonly callsAtObservedRate: number | null;
  readonly credits: {
    /** Sum over the steps whose cost is known. */
    readonly known: number;
    /** Capabilities whose cost is unknown (the spec does not state it; set it with --cost). */
    readonly unknownFor: readonly string[];
    /** The total, or null when any step's cost is unknown. */
    readonly needed: number | null;
  };
  readonly time: {
    readonly keys: number;
    readonly limits: { readonly callsPerMinute: number; readonly callsPerHour: number; readonly activeTasks: number };
    readonly failRate: number;
    readonly ms: number;
    readonly binds: Bound;
    readonly hourMs: number;
    readonly minuteMs: number;
    readonly slotsMs: number;
    /** Calls already in the busiest key's last hour (the run inherits them), every job's and client's this machine knows of. */
    readonly usedHour: number;
    /** Of them, not this job's: other darkroom jobs or commands on the key, other clients of it. */
    readonly othersHour: number;
  };
  readonly account:
    | { readonly checked: false; readonly why: string }
    | {
        readonly checked: true;
        readonly key: string;
        readonly credits: Credits | null;
        readonly enough: boolean | null;
        readonly error: string | null;
        readonly requestId: string | null;
        /** The answer was an account problem a run would stop on (401, 24403, 20601). */
        readonly accountStop: boolean;
      };
  /**
   * Photos of the ledger started under other steps than the job's (null when none): a plain
   * `run` refuses them; the figures above are those of `run --redo-steps`.
   */
  readonly stepsChange: StepsChange | null;
  /** What each output will carry (output.metadata, output.sidecar) and whether ExifTool can run here. */
  readonly metadata: {
    readonly level: 'all' | 'basic' | 'none';
    readonly sidecars: readonly ('json' | 'xmp')[];
    /** The AI system the outputs will name (service.name, else the base URL's host). */
    readonly aiSystem: string | null;
    /** Inputs to be converted to sRGB before upload (a wide-gamut, grey or CMYK profile). */
    readonly toSrgb: number;
    /** Inputs with an XMP sidecar of their own beside them (`scan.xmp`, `scan.tif.xmp`), merged into their outputs' metadata. */
    readonly inputSidecars: number;
    /** Why ExifTool cannot run here (no perl), when the job needs it: a run would stop before any upload. */
    readonly problem: string | null;
  };
}
