import { shownText } from '../../display.js';
import path from 'node:path';
import { CAPABILITIES, isCapability } from '../../spec/capabilities.js';
import { loadConfig, requireInputDir } from '../../config/index.js';
import { hiddenLine } from '../../inputs/hidden.js';
import { formatDuration } from '../../progress/model.js';
import { makePlan, type PlanIo, type PlanOptions, type PlanResult } from '../../lib/plan.js';
import { stepsChangeLines } from './stepsChange.js';
import { ConfigError, EXIT } from '../../errors.js';

export interface PlanArgs extends PlanOptions {
  readonly jobs: string;
  /** `--cost CAP=N`, as typed: read by parseCosts unless `costs` is given. */
  readonly cost?: readonly (string | number)[] | undefined;
  readonly ledger?: string | undefined;
  readonly baseUrl?: string | undefined;
  readonly json?: boolean | undefined;
}

/**
 * `darkroom plan <jobs.yaml>`: a dry run. Finds the inputs as `run` would, reads the ledger
 * if there is one (never creating it), and says what the job needs: calls, credits and the
 * shortest time the limits allow (docs/ARCHITECTURE.md § Performance model). With a key set, one GET
 * /api/v1/credits compares the need with the account; nothing else is sent, no task is
 * created and nothing is uploaded.
 */
export async function planCommand(args: PlanArgs, io: PlanIo): Promise<{ exitCode: number; text: string; plan: PlanResult }> {
  const config = loadConfig(args.jobs, { baseUrl: args.baseUrl, ledger: args.ledger, env: io.env });
  requireInputDir(config);
  const plan = await makePlan(config, { ...args, costs: args.costs ?? parseCosts(args.cost) }, io);
  // Exit 3 when the account check found a problem a run would stop on (bad key, not
  // subscribed, or fewer credits than the known need); 0 otherwise, the check failing or not.
  const accountProblem = plan.account.checked && (plan.account.enough === false || plan.account.accountStop);
  const exitCode = accountProblem ? EXIT.account : EXIT.ok;
  return { exitCode, plan, text: args.json ? JSON.stringify(plan) : formatPlan(plan) };
}

/** What the outputs will carry of their inputs' metadata (the job file's output.metadata and output.sidecar). */
function metadataLine(p: PlanResult): string {
  const m = p.metadata;
  const ai = `each says in XMP that a trained model${m.aiSystem ? ` (${m.aiSystem})` : ''} altered it, and from which original`;
  const what =
    m.level === 'all'
      ? `all: every input's EXIF, IPTC and XMP carried to its output (dates, GPS, camera, captions, keywords, creator, rights…); ${ai}`
      : m.level === 'basic'
        ? `basic: dates, GPS, title, description, keywords, creator and rights carried to every output; ${ai}`
        : "none: every output is the service's bytes exactly, with no metadata of its input and no AI disclosure";
  const fixes = m.level === 'none' ? '' : '; Orientation 1, no stale thumbnail, sRGB';
  const srgb = m.toSrgb > 0 ? `; ${m.toSrgb} input(s) with a non-sRGB colour profile converted to sRGB for upload` : '';
  const own =
    m.inputSidecars > 0
      ? `; ${m.inputSidecars} input(s) with an XMP sidecar of their own (name.xmp, name.ext.xmp) merged into their outputs`
      : '';
  const side = m.sidecars.length > 0 ? `; sidecars: ${m.sidecars.map((s) => `<output>.${s}`).join(', ')}` : '';
  const problem = m.problem ? ` — but ${m.problem}: a run would stop before any upload; install perl, or set output.metadata: none` : '';
  return `metadata ${what}${fixes}${srgb}${own}${side}${problem}`;
}

function formatPlan(p: PlanResult): string {
  const rel = (f: string) => path.relative(process.cwd(), f) || f;
  const L: string[] = [];
  const i = p.inputs;
  L.push(`plan     ${rel(p.jobsFile)} · ledger ${rel(p.ledgerFile)}${p.ledgerExists ? '' : ' (none yet: this would be the first run)'}`);
  L.push(
    `inputs   ${i.found} found${i.otherNames ? ` · ${i.otherNames} the same photo as another (no cost)` : ''} · ${i.skipped.length} skipped · ${i.done} already done · ${i.toDo} to do${i.inProgress ? ` (${i.inProgress} in progress)` : ''}${i.held ? ` · ${i.held} held (see darkroom retry --held)` : ''}${i.failed ? ` · ${i.failed} failed` : ''}`,
  );
  const hidden = hiddenLine(i.hidden);
  if (hidden !== null) L.push(`hidden   ${hidden}`);
  for (const s of i.skipped.slice(0, 20)) L.push(`skipped  ${shownText(s.path)}: ${shownText(s.reason)}`);
  if (i.skipped.length > 20) L.push(`skipped  … and ${i.skipped.length - 20} more (plan --json lists them all)`);
  for (const s of p.steps) {
    const cost =
      s.creditsPerImage === null
        ? `credits unknown (the spec states none for ${s.capability}; give --cost ${s.capability}=N)`
        : `${s.creditsPerImage} credit(s) per image (${s.creditsFrom === 'spec' ? 'the spec' : s.creditsFrom === 'config' ? 'the config' : '--cost'})`;
    const lat = `tasks of ~${formatDuration(s.latencyMs)} (${s.latencyFrom === 'ledger' ? 'measured in the ledger' : s.latencyFrom === 'flag' ? '--latency' : s.latencyFrom === 'hint' ? "the service's waitTime hints" : 'assumed'})`;
    L.push(`step ${s.index + 1}   ${s.capability}: ${s.photos} photo(s) · ${cost} · ${lat}`);
  }
  const c = p.calls;
  L.push(
    `calls    at least ${c.total}: ${c.uploads} upload(s) + ${c.creates} create(s) + ${c.polls} poll(s)${p.time.failRate ? ` (${(p.time.failRate * 100).toFixed(0)}% FAIL assumed)` : ''}; every call counts against the limits` +
      (p.callsAtObservedRate !== null ? ` · ~${p.callsAtObservedRate} at this ledger's calls per step so far` : ''),
  );
  const cr = p.credits;
  L.push(
    cr.needed !== null
      ? `credits  ${cr.needed} needed (FAIL and ERROR are refunded)`
      : cr.known > 0
        ? `credits  at least ${cr.known} needed, plus the unknown cost of ${cr.unknownFor.join(', ')} (give --cost CAPABILITY=N)`
        : `credits  unknown: the spec gives no cost for ${cr.unknownFor.join(', ')} (give --cost CAPABILITY=N)`,
  );
  const t = p.time;
  L.push(
    `time     at best ${formatDuration(t.ms)} with ${t.keys} key(s) at ${t.limits.callsPerMinute}/min, ${t.limits.callsPerHour}/h and ${t.limits.activeTasks} tasks each — ${t.binds} bound (hour ${formatDuration(t.hourMs)} · minute ${formatDuration(t.minuteMs)} · slots ${formatDuration(t.slotsMs)})${t.usedHour ? `; ${t.usedHour} calls already in the key's last hour count${t.othersHour ? ` (${t.othersHour} not this job's)` : ''}` : ''}`,
  );
  L.push(metadataLine(p));
  if (p.stepsChange) {
    const c = p.stepsChange;
    if (c.redo > 0) {
      L.push(
        `changed  the job's steps changed since ${c.redo} photo(s) were started under other steps: \`darkroom run\` refuses them (nothing spent); the figures above are those of \`run --redo-steps\`, which redoes them from the first step. Or put the old steps back`,
      );
    }
    L.push(...stepsChangeLines(c));
  }
  const acc = p.account;
  if (!acc.checked) L.push(`account  not checked: ${acc.why}`);
  else if (acc.credits) {
    const need = cr.needed ?? cr.known;
    const verdict =
      acc.enough === true
        ? 'enough'
        : acc.enough === false
          ? `NOT enough: ${need - acc.credits.remainingCredit} short`
          : 'enough for the known part; the rest depends on the unknown costs';
    L.push(
      cr.needed === null && cr.known === 0
        ? `account  key ${acc.key}: ${acc.credits.remainingCredit} credits remaining (of ${acc.credits.totalCredit}); the need is unknown`
        : `account  key ${acc.key}: ${acc.credits.remainingCredit} credits remaining (of ${acc.credits.totalCredit}) for ${cr.needed === null ? `at least ${need}` : need} needed — ${verdict}`,
    );
  } else L.push(`account  key ${acc.key}: could not read the credits: ${acc.error}`);
  L.push(
    `note     a dry run: no task created, nothing uploaded, no ledger created${acc.checked ? `; the account check was 1 call (GET /api/v1/credits), counted in the key's windows${p.ledgerExists ? ' and recorded in the ledger' : ''}` : ''}`,
  );
  return L.join('\n');
}

/** `--cost restore=1 --cost upscale=2` → { restore: 1, upscale: 2 }; a malformed one is a usage error (exit 2). */
function parseCosts(values: readonly (string | number)[] | undefined): Record<string, number> | undefined {
  if (!values || values.length === 0) return undefined;
  const out: Record<string, number> = {};
  for (const v of values) {
    const m = /^([a-z0-9-]+)=(\d+(?:\.\d+)?)$/.exec(String(v).trim());
    if (!m || !isCapability(m[1]!)) {
      throw new ConfigError(
        '--cost',
        '',
        `expected CAPABILITY=CREDITS with one of ${Object.keys(CAPABILITIES).join('|')}, got ${JSON.stringify(String(v))}`,
      );
    }
    out[m[1]!] = Number(m[2]);
  }
  return out;
}
