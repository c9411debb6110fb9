import { toDarkroomError } from '../errors.js';
import { existsSync } from 'node:fs';
import { checkServiceUrl } from '../run/serviceContact.js';
import { CAPABILITIES, fingerprintKey, isApiError, isCapability } from '../api/index.js';
import { clock } from '../clock.js';
import { requireInputDir, type Config, type ResolvedKey } from '../config/index.js';
import { createsLeft, phaseOf, ProgressReader, type ItemStateOf, type ProgressFacts } from '../ledger/index.js';
import { parseStepsJson, stepsSignature } from '../config/steps.js';
import { discoverBatches, newCounts, type Found } from '../inputs/discover.js';
import { describeChange, type StepsChange } from '../run/stepsCheck.js';
import { ASSUMED_LATENCY_MS, estimate, expectedAttempts } from '../progress/model.js';
import { withAccountClient } from './account.js';
import { stateDirFrom } from './stateDir.js';
import { keyUseOf } from './status.js';
import { exifToolProblem } from '../metadata/exiftool.js';
import { resolveJob, type Job, type JobOptions } from './job.js';
import type { PlanIo, PlanOptions, PlanResult, PlanStep } from './planTypes.js';
import { sidecarsOf } from '../metadata/sidecars.js';

export type { PlanIo, PlanOptions, PlanResult, PlanStep } from './planTypes.js';

/**
 * A dry run. Finds the inputs as `run` would, reads the ledger if there is one (never
 * creating it), and says what the job needs: calls, credits and the shortest time the
 * limits allow (docs/ARCHITECTURE.md § Performance model). With a key set, one GET
 * /api/v1/credits compares the need with the account; nothing else is sent, no task is
 * created and nothing is uploaded.
 */
export async function makePlan(config: Config, args: PlanOptions, io: PlanIo): Promise<PlanResult> {
  const failRate = args.failRate ?? 0;
  const a = expectedAttempts(failRate);

  const ledgerExists = existsSync(config.ledger);
  const { facts, windows, ownerId, stepsChange, tally, counts } = await readInputsAndLedger(config, args, ledgerExists);
  const { skipped, done, inProgress, held, failed, uploads, toDo, stepPhotos, otherNames, found, toSrgb, inputSidecars } = tally.totals();

  const steps = config.steps.map((st, i) => planStep(st.capability, i, stepPhotos[i]!, config, args, facts));
  const stepAttempts = stepPhotos.reduce((sum, n) => sum + n * a, 0);
  const creates = Math.ceil(stepAttempts);
  const calls = { uploads, creates, polls: creates, total: uploads + 2 * creates };
  let callsAtObservedRate: number | null = null;
  if (facts) {
    const stepsDone = facts.byStep.reduce(
      (n, r) => n + (r.state === 'skipped' ? 0 : r.n * (r.step + (phaseOf(r.state) === 'done' || phaseOf(r.state) === 'paid' ? 1 : 0))),
      0,
    );
    if (stepsDone >= 3) callsAtObservedRate = Math.round(uploads + stepAttempts * Math.max(2, facts.callsByKind.task / stepsDone));
  }

  const unknownFor = [...new Set(steps.filter((s) => s.creditsPerImage === null && s.photos > 0).map((s) => s.capability))];
  const known = steps.reduce((sum, s) => sum + (s.creditsPerImage ?? 0) * s.photos, 0);
  const credits = { known, unknownFor, needed: unknownFor.length > 0 ? null : known };

  const keyCount = config.keyEnvs.length;
  const keyFps = config.keyEnvs.map((n) => io.env[n]?.trim()).filter((k): k is string => Boolean(k));
  // The keys' whole hour as their stores on this machine count it (other jobs' and clients'
  // calls too), beside the ledger's own calls.
  const use = Object.values(keyUseOf(stateDirFrom(io.env), keyFps.map(fingerprintKey), clock.now(), ownerId));
  const usedHour = Math.max(0, ...Object.values(windows).map((w) => w.lastHour), ...use.map((u) => u.hour));
  const othersHour = Math.max(0, ...use.map((u) => u.othersHour));
  const busiest = use.filter((u) => u.hour === usedHour)[0];
  const hourFreesInMs = busiest?.hourFreesMs === null || busiest?.hourFreesMs === undefined ? undefined : busiest.hourFreesMs - clock.now();
  const taskMs = steps.reduce((sum, s) => sum + s.photos * a * s.latencyMs, 0);
  const e = estimate({ keys: keyCount, limits: config.limits, calls: calls.total, taskMs, usedHour: [usedHour], hourFreesInMs });
  const time = {
    keys: keyCount,
    limits: {
      callsPerMinute: config.limits.callsPerMinute,
      callsPerHour: config.limits.callsPerHour,
      activeTasks: config.limits.activeTasks,
    },
    failRate,
    ms: e.ms,
    binds: e.binds,
    hourMs: e.hourMs,
    minuteMs: e.minuteMs,
    slotsMs: e.slotsMs,
    usedHour,
    othersHour,
  };

  // The base URL must be the service (keyless, outside the key's windows): exit 2 if not.
  if (config.baseUrl !== null) {
    await checkServiceUrl(config.baseUrl, {
      timeoutMs: config.timeoutMs,
      secrets: keyFps,
      ...(io.transport ? { transport: io.transport } : {}),
    });
  }
  const account = await checkAccount(config, io, credits, keyFps.length > 0);
  return {
    jobsFile: config.file,
    ledgerFile: config.ledger,
    ledgerExists,
    inputs: { found, otherNames, skipped, done, inProgress, held, failed, toDo, hidden: counts.hidden },
    steps,
    calls,
    callsAtObservedRate,
    credits,
    time,
    account,
    stepsChange,
    metadata: {
      level: config.output.metadata,
      sidecars: [...(config.output.sidecar.json ? ['json' as const] : []), ...(config.output.sidecar.xmp ? ['xmp' as const] : [])],
      aiSystem: config.serviceName,
      toSrgb,
      inputSidecars,
      problem: config.output.metadata !== 'none' || config.output.sidecar.xmp ? exifToolProblem(io.env) : null,
    },
  };
}

/**
 * The inputs found, counted against the ledger (if there is one, never created), and what the
 * ledger says of the work so far: its figures, the keys' windows, the steps changed under
 * started photos (a plain run refuses them; the figures are those of `run --redo-steps`, which
 * sends them back to the first step).
 */
async function readInputsAndLedger(config: Config, args: PlanOptions, ledgerExists: boolean) {
  let facts: ProgressFacts | null = null;
  let windows: Record<string, { lastMinute: number; lastHour: number }> = {};
  let ownerId: string | null = null;
  let stepsChange: StepsChange | null = null;
  const counts = newCounts();
  const reader = ledgerExists ? ProgressReader.open(config.ledger) : null;
  try {
    const current = stepsSignature(config.steps);
    const caps = config.steps.map((st) => st.capability);
    const tally = new InputTally(config.steps.length, reader ? reader.itemLookup(current, caps) : () => undefined, config);
    if (reader) {
      const now = clock.now();
      facts = reader.read(now);
      windows = reader.callWindows(now);
      ownerId = reader.ownerId();
      const parse = (_: string, json: string | null) => (json === null ? null : parseStepsJson(json));
      stepsChange = describeChange(reader.stepsCensus(current, caps), config, parse, args.costs);
    }
    // As run finds them, a batch at a time, each counted and let go: a content the ledger has
    // decoded already is not decoded again, a name unchanged since it was hashed is not hashed again.
    const opts = reader
      ? {
          decodeVerdict: (h: string) => reader.decodeVerdict(h),
          cachedHash: (n: string, b: number, m: number | null) => reader.cachedHash(n, b, m),
        }
      : {};
    await clock.hold(
      (async () => {
        for await (const batch of discoverBatches(config, opts, counts)) tally.add(batch);
      })(),
    );
    return { facts, windows, ownerId, stepsChange, tally, counts };
  } finally {
    reader?.close();
  }
}

/**
 * Where each input found stands, as the ledger knows it: done, held, failed, skipped, or
 * still to do (with the uploads and each step's photos that needs); a second name of the same
 * content is a photo already counted (`otherNames`). Fed a batch of the discovery at a time,
 * it keeps counts, the skipped (to list them) and what tells a content already counted: a
 * bit per photo of the ledger, and for contents new to it the first 52 bits of their hash
 * (two contents of a million sharing them: a chance in ten thousand of one name counted as
 * another's), so a million photos take a few megabytes.
 */
class InputTally {
  private readonly skipped: { path: string; reason: string }[] = [];
  private done = 0;
  private inProgress = 0;
  private held = 0;
  private failed = 0;
  private uploads = 0;
  private toDo = 0;
  private otherNames = 0;
  private found = 0;
  private toSrgb = 0;
  private inputSidecars = 0;
  private readonly stepPhotos: number[];
  private counted = new Uint8Array(1024);
  private readonly newContents = new Set<number>();
  private readonly readSidecars: boolean;

  constructor(
    private readonly S: number,
    private readonly lookup: (contentHash: string, relPath: string) => ItemStateOf | undefined,
    config: Config,
  ) {
    this.stepPhotos = new Array<number>(S).fill(0);
    this.readSidecars = config.output.metadata !== 'none' || config.output.sidecar.xmp;
  }

  add(batch: readonly Found[]): void {
    this.found += batch.length;
    this.toSrgb += batch.filter((f) => f.transcode?.includes('converted to sRGB')).length;
    this.inputSidecars += withSidecars(batch, this.readSidecars);
    for (const f of batch) this.one(f);
  }

  /** A content counted already: a second name of the same photo, which costs nothing. */
  private seen(f: Found, known: ItemStateOf | undefined): boolean {
    if (known?.byContent) {
      if (known.id >= this.counted.length) {
        const grown = new Uint8Array(Math.max(known.id + 1, this.counted.length * 2));
        grown.set(this.counted);
        this.counted = grown;
      }
      if (this.counted[known.id] === 1) return true;
      this.counted[known.id] = 1;
      return false;
    }
    const key = parseInt(f.contentHash.replace(/^[a-z]+:/, '').slice(0, 13), 16);
    if (Number.isNaN(key)) return false;
    if (this.newContents.has(key)) return true;
    this.newContents.add(key);
    return false;
  }

  private one(f: Found): void {
    const known = this.lookup(f.contentHash, f.relPath);
    if (this.seen(f, known)) {
      this.otherNames++;
      return;
    }
    if (known?.redo) {
      // Redone from the first step with its upload (or URL): no upload, every step again.
      this.inProgress++;
      this.toDo++;
      for (let i = 0; i < this.S; i++) this.stepPhotos[i]!++;
      return;
    }
    if (known?.state === 'skipped' || (!known && f.skipReason)) {
      this.skipped.push({ path: f.relPath, reason: f.skipReason ?? 'skipped in the ledger' });
      return;
    }
    if (known?.state === 'done') {
      this.done++;
      return;
    }
    if (known?.state === 'held') {
      this.held++;
      return;
    }
    if (known?.state === 'failed') {
      this.failed++;
      return;
    }
    if (known) this.inProgress++;
    this.toDo++;
    // URL inputs (http/https) are given to the service as they are: no upload.
    const isUrl = /^https?:\/\//.test(f.srcPath);
    if (!isUrl && (!known || phaseOf(known.state) === 'upload')) this.uploads++;
    // The steps still to create, as the ledger counts them (createsLeft: a running task's step is made).
    const from = known ? this.S - createsLeft(known.state, known.step, this.S) : 0;
    for (let i = from; i < this.S; i++) this.stepPhotos[i]!++;
  }

  totals() {
    // By path, as plan lists them (the walk goes a folder at a time).
    this.skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const { skipped, done, inProgress, held, failed, uploads, toDo, stepPhotos, otherNames, found, toSrgb, inputSidecars } = this;
    return { skipped, done, inProgress, held, failed, uploads, toDo, stepPhotos, otherNames, found, toSrgb, inputSidecars };
  }
}

function planStep(
  capability: string,
  index: number,
  photos: number,
  config: Config,
  args: PlanOptions,
  facts: ProgressFacts | null,
): PlanStep {
  const fromFlag = args.costs?.[capability];
  const fromConfig = config.credits[capability];
  const fromSpec = isCapability(capability) ? CAPABILITIES[capability].credits : null;
  const [creditsPerImage, creditsFrom] =
    fromFlag !== undefined
      ? [fromFlag, 'flag' as const]
      : fromConfig !== undefined
        ? [fromConfig, 'config' as const]
        : fromSpec !== null
          ? [fromSpec, 'spec' as const]
          : [null, null];
  const seen = facts?.latency.find((l) => l.capability === capability);
  const hint = facts?.waitHints.find((l) => l.capability === capability);
  const [latencyMs, latencyFrom] =
    args.latencyS !== undefined
      ? [args.latencyS * 1000, 'flag' as const]
      : seen
        ? [seen.meanMs, 'ledger' as const]
        : hint
          ? [hint.meanMs, 'hint' as const]
          : [ASSUMED_LATENCY_MS, 'assumed' as const];
  return { index, capability, photos, creditsPerImage, creditsFrom, latencyMs, latencyFrom };
}

async function checkAccount(config: Config, io: PlanIo, need: PlanResult['credits'], keySet: boolean): Promise<PlanResult['account']> {
  if (!keySet)
    return { checked: false, why: `no key in ${config.keyEnvs.join(' / ')}: set it to compare the need with the account's credits` };
  if (config.baseUrl === null)
    return { checked: false, why: 'no service.baseUrl (or DARKROOM_BASE_URL / --base-url): the account was not asked' };
  const name = config.keyEnvs.find((n) => io.env[n]?.trim())!;
  const value = io.env[name]!.trim();
  const key: ResolvedKey = { env: name, key: value, fingerprint: fingerprintKey(value) };
  const target = { keys: [key], baseUrl: config.baseUrl, timeoutMs: config.timeoutMs, ledgerFile: config.ledger, config };
  try {
    const c = await withAccountClient(target, key, io, (client) => client.credits());
    // With a step of unknown cost, only "fewer than the known part" is a definite no.
    const enough = need.needed !== null ? c.remainingCredit >= need.needed : c.remainingCredit < need.known ? false : null;
    return { checked: true, key: key.fingerprint, credits: c, enough, error: null, requestId: null, accountStop: false };
  } catch (err) {
    // A redirecting base URL is a config error (exit 2), as in `run`, not an account answer.
    if (!isApiError(err) || err.kind === 'stop-config') throw err;
    return {
      checked: true,
      key: key.fingerprint,
      credits: null,
      enough: null,
      error: err.message,
      requestId: err.requestId,
      accountStop: err.kind === 'stop-account',
    };
  }
}

/** What a job needs, in short (`plan()` of src/index.ts); `details` has every figure `darkroom plan --json` prints. */
export interface Plan {
  /** Photos still to do (new, or started and not finished). */
  readonly photos: number;
  /** The fewest calls that work needs: uploads, then a create and a poll per step. */
  readonly calls: number;
  /** The shortest time the limits allow, hours (docs/ARCHITECTURE.md § Performance model). */
  readonly hours: number;
  /** Credits needed if every task succeeds; null when a capability's price is unknown. */
  readonly credits: number | null;
  readonly details: PlanResult;
}

/** The library's `plan()` (src/index.ts). */
export async function planOfJob(job: Job | string, opts: JobOptions & PlanOptions): Promise<Plan> {
  try {
    const { config, env } = resolveJob(job, opts);
    requireInputDir(config);
    const details = await makePlan(config, opts, { env });
    return {
      photos: details.inputs.toDo,
      calls: details.calls.total,
      hours: details.time.ms / 3_600_000,
      credits: details.credits.needed,
      details,
    };
  } catch (err) {
    throw toDarkroomError(err);
  }
}

/** How many found inputs have an XMP sidecar of their own (each folder listed once); 0 when nothing would read them. */
function withSidecars(found: readonly { readonly srcPath: string; readonly skipReason: string | null }[], read: boolean): number {
  if (!read) return 0;
  const names = new Map<string, readonly string[]>();
  return found.filter((f) => f.skipReason === null && sidecarsOf(f.srcPath, names).length > 0).length;
}
