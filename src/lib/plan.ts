import { toDarkroomError } from '../errors.js';
import { existsSync } from 'node:fs';
import { checkServiceUrl } from '../run/serviceContact.js';
import { CAPABILITIES, fingerprintKey, isApiError, isCapability } from '../api/index.js';
import { clock } from '../clock.js';
import { requireInputDir, type Config, type ResolvedKey } from '../config/index.js';
import { createsLeft, phaseOf, ProgressReader, type ItemStateOf, type ProgressFacts } from '../ledger/index.js';
import { parseStepsJson, stepsSignature } from '../config/steps.js';
import { discoverFiles, type Found } from '../inputs/discover.js';
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
  let states = new Map<string, ItemStateOf>();
  let facts: ProgressFacts | null = null;
  let windows: Record<string, { lastMinute: number; lastHour: number }> = {};
  let ownerId: string | null = null;
  // Photos started under other steps than the job's: a plain run refuses; the figures below
  // are those of `run --redo-steps`, which sends them back to the first step.
  let stepsChange: StepsChange | null = null;
  let redo = new Set<string>();
  let discovered: Awaited<ReturnType<typeof discoverFiles>>;
  const reader = ledgerExists ? ProgressReader.open(config.ledger) : null;
  try {
    // As run finds them: a content the ledger has decoded already is not decoded again.
    discovered = await clock.hold(discoverFiles(config, reader ? { decodeVerdict: (h) => reader.decodeVerdict(h) } : {}));
    if (reader) {
      const now = clock.now();
      states = reader.itemStates();
      facts = reader.read(now);
      windows = reader.callWindows(now);
      ownerId = reader.ownerId();
      const r = reader.stepsCensus(
        stepsSignature(config.steps),
        config.steps.map((st) => st.capability),
      );
      stepsChange = describeChange(r.census, config, (_, json) => (json === null ? null : parseStepsJson(json)), args.costs);
      redo = r.redo;
    }
  } finally {
    reader?.close();
  }
  const found = discovered.found;

  const S = config.steps.length;
  const { skipped, done, inProgress, held, failed, uploads, toDo, stepPhotos, otherNames } = countInputs(found, states, redo, S);

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
    inputs: { found: found.length, otherNames, skipped, done, inProgress, held, failed, toDo, hidden: discovered.hidden },
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
      toSrgb: found.filter((f) => f.transcode?.includes('converted to sRGB')).length,
      inputSidecars: withSidecars(found, config.output.metadata !== 'none' || config.output.sidecar.xmp),
      problem: config.output.metadata !== 'none' || config.output.sidecar.xmp ? exifToolProblem(io.env) : null,
    },
  };
}

/**
 * Where each input found stands, as the ledger knows it: done, held, failed, skipped, or
 * still to do (with the uploads and each step's photos that needs); a second name of the same
 * content is a photo already counted (`otherNames`).
 */
function countInputs(found: readonly Found[], states: ReadonlyMap<string, ItemStateOf>, redo: ReadonlySet<string>, S: number) {
  const skipped: { path: string; reason: string }[] = [];
  let done = 0;
  let inProgress = 0;
  let held = 0;
  let failed = 0;
  let uploads = 0;
  let toDo = 0;
  // A photo is its content, as run counts it: a second name of the same bytes costs nothing.
  const contents = new Set<string>();
  let otherNames = 0;
  const stepPhotos = new Array<number>(S).fill(0);
  for (const f of found) {
    if (contents.has(f.contentHash)) {
      otherNames++;
      continue;
    }
    contents.add(f.contentHash);
    const known = states.get(`sha256:${f.contentHash}`) ?? states.get(f.relPath);
    if (known && redo.has(known.relPath)) {
      // Redone from the first step with its upload (or URL): no upload, every step again.
      inProgress++;
      toDo++;
      for (let i = 0; i < S; i++) stepPhotos[i]!++;
      continue;
    }
    if (known?.state === 'skipped' || (!known && f.skipReason)) {
      skipped.push({ path: f.relPath, reason: f.skipReason ?? 'skipped in the ledger' });
      continue;
    }
    if (known?.state === 'done') {
      done++;
      continue;
    }
    if (known?.state === 'held') {
      held++;
      continue;
    }
    if (known?.state === 'failed') {
      failed++;
      continue;
    }
    if (known) inProgress++;
    toDo++;
    // URL inputs (http/https) are given to the service as they are: no upload.
    const isUrl = /^https?:\/\//.test(f.srcPath);
    if (!isUrl && (!known || phaseOf(known.state) === 'upload')) uploads++;
    // The steps still to create, as the ledger counts them (createsLeft: a running task's step is made).
    const from = known ? S - createsLeft(known.state, known.step, S) : 0;
    for (let i = from; i < S; i++) stepPhotos[i]!++;
  }
  return { skipped, done, inProgress, held, failed, uploads, toDo, stepPhotos, otherNames };
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
