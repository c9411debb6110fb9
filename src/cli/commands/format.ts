import { shownText } from '../../display.js';
import { metadataNoteText, type LedgerStatus } from '../../ledger/index.js';
import { formatDuration } from '../../progress/model.js';
import { clockTime, followText, keyCalls, keyWaitText } from '../../progress/render.js';
import type { GuessedSlotsView, Progress } from '../../progress/snapshot.js';

/** The human form of a status: counts first, then every item that needs a person's attention. */
export function formatStatus(
  s: LedgerStatus,
  ledgerFile: string,
  limits?: { callsPerMinute: number; callsPerHour: number },
  jobsFile?: string,
  going?: RunGoing,
): string {
  const lines: string[] = [];
  lines.push(`ledger   ${shownText(ledgerFile)}`);
  lines.push(`photos   ${photoCounts(s)}`);
  if (s.skipped)
    lines.push(
      `skipped  ${s.skipped} input(s) darkroom will not send (listed below with why): not in the total; replace or remove them and run again`,
    );
  if (s.paidNotDownloaded > 0) lines.push(paidNotDownloadedLine(s.paidNotDownloaded, jobsFile, going));
  if (s.done > 0) lines.push(reviewLine(s.review, jobsFile, going));
  if (s.metadataNotCarried > 0) {
    lines.push(
      `metadata ${s.metadataNotCarried} output(s) without all of their input's metadata: the photos are done, the reasons are listed below`,
    );
  }
  if (s.gone)
    lines.push(
      `gone     ${s.gone} photo(s) whose files left the input folder before they were done: not in the total; they come back with their files`,
    );
  const busy = Object.entries(s.states).filter(([k, n]) => n > 0 && !['done', 'failed', 'held', 'skipped', 'gone'].includes(k));
  if (busy.length > 0) lines.push(`in work  ${busy.map(([k, n]) => `${k} ${n}`).join(' · ')}`);
  const keys = Object.entries(s.calls.perKey);
  if (keys.length === 0) lines.push(`calls    ${s.calls.total} in all, none in the last hour`);
  for (const [fp, c] of keys) {
    const lim = limits ? ` (limits ${limits.callsPerMinute}/min, ${limits.callsPerHour}/h)` : '';
    lines.push(`calls    key ${fp}: ${c.lastMinute} in the last minute, ${c.lastHour} in the last hour${lim}; ${s.calls.total} in all`);
  }
  for (const kind of ['held', 'failed', 'skipped'] as const) {
    const list = s.problems.filter((p) => p.state === kind);
    if (list.length === 0) continue;
    lines.push('', `${kind}:`);
    for (const p of list) {
      // An id the reason already quotes is not repeated.
      const has = (id: string | null) => id !== null && id !== '' && !(p.reason ?? '').includes(id);
      const ids = [has(p.sentRequestId) ? `X-Request-Id ${p.sentRequestId}` : '', has(p.requestId) ? `requestId ${p.requestId}` : '']
        .filter(Boolean)
        .join(', ');
      lines.push(
        `  ${shownText(p.path)}  step ${p.step + 1}: ${shownText(p.reason ?? 'no reason recorded')}${ids ? ` [${shownText(ids)}]` : ''}`,
      );
    }
  }
  const why = s.notDownloaded.filter((n) => n.reason);
  if (why.length > 0) {
    lines.push('', 'paid, not yet downloaded:');
    for (const n of why) lines.push(`  ${shownText(n.path)}: ${shownText(n.reason ?? '')}`);
  }
  if (s.metadataNotes.length > 0) {
    lines.push('', 'metadata not all carried:');
    for (const n of s.metadataNotes) lines.push(`  ${shownText(n.path)}: ${shownText(metadataNoteText(n.level, n.reason))}`);
  }
  return lines.join('\n');
}

/**
 * How far the review of the done photos has got, and what to do next: `review` shares the
 * ledger with a run, `retry --rejected` needs the lock, so while another command holds it
 * the advice says to wait for its end.
 */
function reviewLine(r: LedgerStatus['review'], jobsFile?: string, going?: RunGoing): string {
  const jobs = jobsFile ?? '<jobs.yaml>';
  const redo = `\`darkroom retry --rejected ${jobs}\``;
  const after =
    going === undefined
      ? ''
      : ` once ${going.command === 'run' ? 'the run going on' : `darkroom ${going.command}`} (pid ${going.pid}) has ended`;
  const next = r.unreviewed > 0 ? ` · \`darkroom review ${jobs}\` to look` : r.rejected > 0 ? ` · ${redo} to redo${after}` : '';
  return `review   ${r.accepted} accepted · ${r.rejected} rejected · ${r.unreviewed} not reviewed${next}`;
}

/** "9 total · 5 done · 1 failed · 1 held · 2 pending · 1 skipped": the photos' figures, as status, run and report say them. */
export function photoCounts(s: LedgerStatus): string {
  const apart = [s.skipped ? `${s.skipped} skipped` : '', s.gone ? `${s.gone} gone` : ''].filter(Boolean);
  return [`${s.total} total`, `${s.done} done`, `${s.failed} failed`, `${s.held} held`, `${s.pending} pending`, ...apart].join(' · ');
}

/** What holds the ledger while `status` reads it (ProgressReader.runHolder): advice must work while it lasts. */
export interface RunGoing {
  readonly command: string;
  readonly pid: number;
}

/** The line every status and the end of a run show while results are paid for and not on disk. */
function paidNotDownloadedLine(n: number, jobsFile?: string, going?: RunGoing): string {
  const rerun = `\`darkroom run ${jobsFile ?? '<jobs.yaml>'}\``;
  const fetch =
    going === undefined
      ? `run ${rerun} again to fetch them`
      : going.command === 'run'
        ? `the run going on (pid ${going.pid}) fetches them`
        : `once darkroom ${going.command} (pid ${going.pid}) has ended, run ${rerun} to fetch them`;
  return `paid     ${n} paid, not yet downloaded: ${fetch}`;
}

/**
 * `darkroom status` with the live display's figures: the lines of formatStatus, then per
 * step, per key (task slots and call windows), rates and the ETA from the budget model.
 */
export function formatProgress(
  p: Progress,
  s: LedgerStatus,
  ledgerFile: string,
  limitsFrom: 'jobs' | 'default',
  jobsFile?: string,
  going?: RunGoing,
): string {
  const lines = formatStatus(s, ledgerFile, p.limits ?? undefined, jobsFile, going).split('\n');
  const extra: string[] = [];
  for (const st of p.steps) {
    const pct = st.total > 0 ? ` (${Math.floor((100 * st.done) / st.total)}%)` : '';
    const more = s.steps?.find((x) => x.step === st.index);
    const parts = [
      st.running ? `${st.running} running` : '',
      more?.waiting ? `${more.waiting} waiting for it` : '',
      more?.failed ? `${more.failed} failed at it` : '',
      more?.held ? `${more.held} held at it` : '',
    ].filter(Boolean);
    extra.push(
      `step ${st.index + 1}   ${st.capability ?? '?'}: ${st.done}/${st.total} past it${pct}${parts.length ? ` · ${parts.join(' · ')}` : ''}`,
    );
  }
  for (const k of p.keys) {
    const lim = p.limits;
    const { minute, hour } = keyCalls(k);
    const other = k.use?.otherTasks ? ` (and ${k.use.otherTasks} by another darkroom job)` : '';
    const others = k.use?.othersHour ? ` (${k.use.othersHour} not this job's)` : '';
    extra.push(
      `key      ${k.key}: ${k.tasks}${lim ? `/${lim.activeTasks}` : ''} task slots in use${other} · ${minute}${lim ? `/${lim.callsPerMinute}` : ''} calls in the last minute · ${hour}${lim ? `/${lim.callsPerHour}` : ''} in the last hour${others}`,
    );
    const wait = keyWaitText(k, p);
    if (wait) extra.push(`waiting  ${k.key}: ${wait}`);
    if (k.guessed) extra.push(`slots    ${k.key}: ${guessedText(k.guessed, jobsFile, going)}`);
  }
  const t = p.throughput;
  const perStep = p.callsPerStep === null ? '' : ` · ${p.callsPerStep.toFixed(2)} calls per photo-step so far`;
  extra.push(
    t.windowMs > 0
      ? `rate     ${t.photosDone} photos done in the last ${formatDuration(t.windowMs)} (${t.photosPerMinute.toFixed(1)}/min) · ${t.callsPerMinute.toFixed(1)} calls/min${perStep}`
      : `rate     no calls in the last 15 minutes${perStep}`,
  );
  if (p.pending === 0) extra.push('eta      nothing left to do');
  else if (p.eta) {
    const e = p.eta;
    const why = `${e.binds} bound: hour ${formatDuration(e.hourMs)}, minute ${formatDuration(e.minuteMs)}, slots ${formatDuration(e.slotsMs)}`;
    const lim = limitsFrom === 'default' ? '; spec limits assumed, name the jobs file for its own' : '';
    extra.push(
      e.remainingCalls === 0 && e.downloadsLeft > 0
        ? `eta      ${e.downloadsLeft} result(s) to download, no calls left`
        : `eta      at best ${formatDuration(e.ms)} more under the limits (${why}); ~${e.remainingCalls} calls left${e.basis === 'assumed' ? ', early estimate' : ''}${lim}`,
    );
  }
  if (p.following) extra.push(`follow   ${followText(p.following)}`);
  // After the counts (and the "in work" line), before the per-key call lines and the problem lists.
  const at = lines.findIndex((l) => l.startsWith('calls '));
  lines.splice(at < 0 ? lines.length : at, 0, ...extra);
  return lines.join('\n');
}

/**
 * Why a key's slots are counted busy with nothing running here, and what frees them now:
 * "3 counted busy by creates whose answer was lost (held), until 21:04:05 at most; a run asks
 * the service before then; `darkroom retry --held` frees them". A stopped run's tasks are
 * polled by the next run (retry --held has none of them to free); while a run holds the
 * ledger, no other command may act on it.
 */
function guessedText(g: GuessedSlotsView, jobsFile?: string, going?: RunGoing): string {
  const deadCreates = g.deadRun - g.deadTasks;
  const by = [
    g.held ? [g.held, 'by creates whose answer was lost (held)'] : null,
    deadCreates ? [deadCreates, "by a stopped run's creates in flight"] : null,
    g.deadTasks ? [g.deadTasks, "by a stopped run's tasks (they may still run at the service)"] : null,
  ].filter((x): x is [number, string] => x !== null);
  const counted = by.length === 1 ? ` ${by[0]![1]}` : `: ${by.map(([n, why]) => `${n} ${why}`).join(', ')}`;
  const what = [
    going ? `the ${going.command === 'run' ? 'run going on' : `darkroom ${going.command} going on`} asks the service before then` : '',
    !going && g.held + deadCreates > 0 ? 'a run asks the service before then; `darkroom retry --held` frees them' : '',
    !going && g.deadTasks > 0 ? `the next \`darkroom run ${jobsFile ?? '<jobs.yaml>'}\` polls the tasks` : '',
  ].filter(Boolean);
  return `${g.held + g.deadRun} counted busy${counted}, until ${clockTime(g.untilMs)} at most; ${what.join('; ')}`;
}
