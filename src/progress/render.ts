import { shownText } from '../display.js';
import cliTruncate from 'cli-truncate';
import stringWidth from 'string-width';
import wrapAnsi from 'wrap-ansi';
import { formatDuration } from './model.js';
import type { FollowView, GuessedSlotsView, KeyProgress, Progress, ServiceDown } from './snapshot.js';

/** NO_COLOR (https://no-color.org): present and not empty turns colour off; a non-terminal never gets colour. */
export function colorWanted(env: NodeJS.ProcessEnv, isTTY: boolean): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

export interface Paint {
  readonly green: (s: string) => string;
  readonly red: (s: string) => string;
  readonly yellow: (s: string) => string;
  readonly dim: (s: string) => string;
  readonly bold: (s: string) => string;
}

function paint(color: boolean): Paint {
  const wrap = (open: number, close: number) => (s: string) => (color ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), dim: wrap(2, 22), bold: wrap(1, 22) };
}

const rate = (n: number) => (n >= 10 ? n.toFixed(0) : n.toFixed(1));

function etaText(p: Progress): string {
  if (p.pending === 0) return 'nothing left';
  if (!p.eta) return 'ETA unknown (no limits)';
  if (p.eta.remainingCalls === 0 && p.eta.downloadsLeft > 0) return `${p.eta.downloadsLeft} result(s) downloading; no calls left`;
  const why = p.eta.binds === 'slots' ? 'task slots bind' : p.eta.binds === 'hour' ? 'hour window binds' : 'minute window binds';
  return `ETA ${formatDuration(p.eta.ms)} (${why}${p.eta.basis === 'assumed' ? ', early estimate' : ''}) · ~${p.eta.remainingCalls} calls left`;
}

/** 21:04:05, local time. */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
}

/** The key's calls in its windows: its whole use when its store was read (other jobs' and clients' too), else this job's. */
export function keyCalls(k: KeyProgress): { minute: number; hour: number } {
  return { minute: Math.max(k.lastMinute, k.use?.minute ?? 0), hour: Math.max(k.lastHour, k.use?.hour ?? 0) };
}

function keyText(k: KeyProgress, p: Progress): string {
  const lim = p.limits;
  const { minute, hour } = keyCalls(k);
  const text = lim
    ? `tasks ${k.tasks}/${lim.activeTasks} · calls ${minute}/${lim.callsPerMinute} this minute · ${hour}/${lim.callsPerHour} this hour`
    : `tasks ${k.tasks} · calls ${minute} this minute · ${hour} this hour`;
  return k.guessed ? `${text} · ${guessedShort(k.guessed)}` : text;
}

/**
 * What the key's work waits for, its own or another job's or client's doing: "hour window
 * full until 14:05:12 (961 of its 1000 calls not this job's)", "hour window: 3
 * calls of room, more from 14:05:12 (9 left; …)", "3 task slot(s) held by another darkroom
 * job on this key"; null when nothing of the kind holds it back. The time comes first: at
 * 80 columns the row is cut after it.
 */
export function keyWaitText(k: KeyProgress, p: Progress): string | null {
  const lim = p.limits;
  const u = k.use;
  if (!lim || !u || p.pending === 0) return null;
  const parts: string[] = [];
  const by = (others: number, all: number) => (others > 0 ? ` (${others} of its ${all} calls not this job's)` : '');
  const byShort = (others: number) => (others > 0 ? `; ${others} of its calls not this job's` : '');
  const room = lim.callsPerHour - u.hour;
  const needed = p.eta?.remainingCalls ?? 0;
  if (room <= 0 && u.hourFreesMs !== null) parts.push(`hour window full until ${clockTime(u.hourFreesMs)}${by(u.othersHour, u.hour)}`);
  else if (room < needed && u.hourFreesMs !== null)
    parts.push(`hour window: ${room} calls of room, more from ${clockTime(u.hourFreesMs)} (${needed} left${byShort(u.othersHour)})`);
  else if (u.minute >= lim.callsPerMinute && u.minuteFreesMs !== null)
    parts.push(`minute window full until ${clockTime(u.minuteFreesMs)}${by(u.othersMinute, u.minute)}`);
  if (u.otherTasks > 0 && k.tasks + u.otherTasks >= lim.activeTasks)
    parts.push(`${u.otherTasks} task slot(s) held by another darkroom job on this key`);
  return parts.length > 0 ? parts.join('; ') : null;
}

/**
 * "3 slots counted busy (held creates) until 21:04:05 at most; the run asks the service
 * before then": drawn by the run itself, which holds the ledger, so it names no other command.
 */
function guessedShort(g: GuessedSlotsView): string {
  const why = [g.held ? 'held creates' : '', g.deadRun ? 'a run that stopped' : ''].filter(Boolean).join(', ');
  return `${g.held + g.deadRun} slots counted busy (${why}) until ${clockTime(g.untilMs)} at most; the run asks the service before then`;
}

function problemsText(p: Progress): string {
  const parts = [`${p.failed} failed`, `${p.held} held`, ...(p.skipped ? [`${p.skipped} skipped`] : [])];
  const last = p.problems.find((x) => x.state === 'held') ?? p.problems.find((x) => x.state === 'failed') ?? p.problems[0];
  if (last) parts.push(`e.g. ${shownText(last.path)}: ${shownText(last.reason ?? last.state)}`);
  return parts.join(' · ');
}

/** "following since 08:02 · last new photo 10:41 · 3 settling" (`run --follow`). */
export function followText(f: FollowView): string {
  const last = f.lastNewMs === null ? 'no new photo yet' : `last new photo ${clockTime(f.lastNewMs).slice(0, 5)}`;
  const how = f.how === 'poll' ? ` · scanned every ${formatDuration(f.pollMs)}` : '';
  return `following since ${clockTime(f.sinceMs).slice(0, 5)} · ${last} · ${f.settling} settling${how}`;
}

/** "service unreachable since 03:12:05; next try in 40 s" */
export function serviceText(s: ServiceDown, nowMs: number): string {
  return `service unreachable since ${clockTime(s.sinceMs)}; next try in ${Math.max(0, Math.ceil((s.nextTryAtMs - nowMs) / 1000))} s`;
}

/** "finding photos… 41,200 so far": the run's discovery still going on, beside the work. */
function discoveryText(d: { readonly found: number }): string {
  return `finding photos… ${d.found.toLocaleString('en-US')} so far`;
}

/**
 * The one-line summary printed once a minute without a terminal (or with --quiet): every
 * figure of the live display on one line, for a log file or a CI console.
 */
export function summaryLine(p: Progress, elapsedMs: number): string {
  const parts = [`darkroom: ${p.done}/${p.total} done`];
  if (p.discovery) parts.push(discoveryText(p.discovery));
  for (const s of p.steps) {
    if (p.steps.length > 1) parts.push(`step ${s.index + 1} ${s.capability ?? ''} ${s.done}/${s.total}`.replace('  ', ' '));
  }
  for (const k of p.keys) {
    const { minute, hour } = keyCalls(k);
    parts.push(`${p.keys.length > 1 ? `${k.key} ` : ''}tasks ${k.tasks} · calls ${minute}/min ${hour}/h`);
    if (k.guessed) parts.push(guessedShort(k.guessed));
    const wait = keyWaitText(k, p);
    if (wait) parts.push(`waiting: ${wait}`);
  }
  parts.push(`${rate(p.throughput.photosPerMinute)} photos/min`);
  parts.push(p.pending === 0 ? 'nothing left' : p.eta ? `ETA ${formatDuration(p.eta.ms)}` : 'ETA unknown');
  parts.push(`${p.failed} failed`, `${p.held} held`, `${p.pending} pending`, `elapsed ${formatDuration(elapsedMs)}`);
  if (p.service) parts.push(serviceText(p.service, p.atMs));
  if (p.following) parts.push(followText(p.following));
  return parts.join(' · ');
}

export interface FrameOptions {
  readonly color: boolean;
  /** Columns of the terminal; lines are cut to fit, never wrapped. */
  readonly width: number;
  readonly title: string;
  readonly elapsedMs: number;
  /** Draws the bar of a step (cli-progress's BarFormat in the live display). */
  readonly bar: (fraction: number) => string;
}

/** The rows of the live display, top to bottom; one row per step and per key. */
export function frameRows(p: Progress, o: FrameOptions): { id: string; text: string; fraction?: number }[] {
  const c = paint(o.color);
  const rows: { id: string; text: string; fraction?: number }[] = [];
  rows.push({
    id: 'title',
    text: `${c.bold('darkroom')} ${shownText(o.title)} · ${c.green(`${p.done}/${p.total} photos done`)}${p.discovery ? ` · ${c.dim(discoveryText(p.discovery))}` : ''} · elapsed ${formatDuration(o.elapsedMs)}`,
  });
  const labelWidth = Math.max(...p.steps.map((s) => `step ${s.index + 1} ${s.capability ?? ''}`.length), 8);
  for (const s of p.steps) {
    const label = `step ${s.index + 1} ${s.capability ?? ''}`.padEnd(labelWidth);
    const fraction = s.total > 0 ? s.done / s.total : 0;
    rows.push({
      id: `step${s.index}`,
      text: `${label} ${c.green(o.bar(fraction))} ${s.done}/${s.total}${s.running ? c.dim(` · ${s.running} running`) : ''}`,
      fraction,
    });
  }
  for (const k of p.keys) {
    rows.push({ id: `key:${k.key}`, text: `${'key'.padEnd(labelWidth)} ${k.key}: ${keyText(k, p)}` });
    const wait = keyWaitText(k, p);
    if (wait) rows.push({ id: `wait:${k.key}`, text: `${'waiting'.padEnd(labelWidth)} ${c.yellow(wait)}` });
  }
  const perStep = p.callsPerStep === null ? '' : ` · ${p.callsPerStep.toFixed(1)} calls/step`;
  rows.push({
    id: 'rate',
    text: `${'rate'.padEnd(labelWidth)} ${rate(p.throughput.photosPerMinute)} photos/min · ${rate(p.throughput.callsPerMinute)} calls/min${perStep}`,
  });
  rows.push({ id: 'eta', text: `${'eta'.padEnd(labelWidth)} ${etaText(p)}` });
  if (p.following) rows.push({ id: 'follow', text: `${'follow'.padEnd(labelWidth)} ${followText(p.following)}` });
  if (p.service) rows.push({ id: 'service', text: `${'service'.padEnd(labelWidth)} ${c.yellow(serviceText(p.service, p.atMs))}` });
  const bad = p.failed + p.held > 0;
  rows.push({ id: 'problems', text: `${'problems'.padEnd(labelWidth)} ${bad ? c.yellow(problemsText(p)) : 'none'}` });
  return rows.map((r) => ({ ...r, text: fit(r.text, o.width) }));
}

/**
 * Cut a line (which may hold colour codes) to the terminal's `width` columns, less one (a
 * line that fills the last column makes some terminals scroll), counting wide characters
 * (CJK, emoji) as the two columns they take; colour is closed after the cut.
 */
export function fit(s: string, width: number): string {
  const max = Math.max(10, width - 1);
  if (stringWidth(s) <= max) return s;
  // A wide character astride the last column is kept whole by cli-truncate: cut one column sooner then.
  let cut = cliTruncate(s, max, { position: 'end', truncationCharacter: '…' });
  if (stringWidth(cut) > max) cut = cliTruncate(s, max - 1, { position: 'end', truncationCharacter: '…' });
  return cut.includes('\x1b[') ? `${cut}\x1b[0m` : cut;
}

export function stripAnsi(s: string): string {
  // eslint-disable-next-line no-control-regex -- an ANSI escape sequence is what is matched
  return s.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
}

/**
 * A log line for a terminal `width` columns wide, as the rows it takes: broken at spaces,
 * a word longer than a row (a path, a request id) broken inside it, never cut; colour codes
 * and wide characters counted as the terminal shows them (wrap-ansi).
 */
export function wrapLine(line: string, width: number): string[] {
  return wrapAnsi(line, Math.max(20, width - 1), { hard: true, trim: true }).split('\n');
}
