import { TERMINAL, type ItemState, type ReportData, type ReportPhoto, type ReportProblem } from '../ledger/index.js';
import { throughputSvg } from './chart.js';
import type { CreditsSpent } from './credits.js';
import { escapeHtml, formatBucket, formatDuration, formatNumber, formatTime } from './format.js';
import { PHOTOS_CSS, PHOTOS_SCRIPT } from './photosTable.js';
import type { FileFacts } from './thumbs.js';

/** One photo's row: its ledger facts, what its files are, and the link to its full-size output. */
export interface ReportRow {
  readonly photo: ReportPhoto;
  readonly input: FileFacts;
  /** Null for a photo with no output (not done). */
  readonly output: FileFacts | null;
  /** The output's link, relative to the report (null: no output). */
  readonly href: string | null;
}

export interface ReportPage {
  readonly data: ReportData;
  /** Files and folders as they are to be shown (relative unless --absolute-paths). */
  readonly jobsFile: string | null;
  readonly ledgerFile: string;
  readonly inputDir: string | null;
  readonly outputDir: string | null;
  readonly generatedMs: number;
  readonly rows: readonly ReportRow[];
  /** The thumbnails folder as an href prefix from the report (null: no thumbnails). */
  readonly thumbsHref: string | null;
  readonly credits: CreditsSpent;
  /** Applied to every piece of text from the ledger or the files (paths made relative, the key masked) before it is escaped. */
  readonly clean?: (s: string) => string;
}

/** The states a row is filtered by: each ledger state belongs to one. */
export const STATE_GROUPS = ['done', 'failed', 'held', 'skipped', 'gone', 'pending'] as const;
export type StateGroup = (typeof STATE_GROUPS)[number];

export function stateGroup(state: string): StateGroup {
  // The ends group by themselves, everything not terminal is pending (src/ledger/transitions.ts).
  return TERMINAL.has(state as ItemState) ? (state as StateGroup) : 'pending';
}

/** sharp's format names, with the one spelling difference that is no change. */
export function formatChanged(input: FileFacts, output: FileFacts | null): boolean {
  if (!input.ok || !output?.ok) return false;
  const norm = (f: string) => (f === 'jpg' ? 'jpeg' : f);
  return norm(input.format) !== norm(output.format);
}

/**
 * The whole report: one HTML file with its CSS and a small script inline. The photos are a
 * JSON block the script shows a page at a time (filtered by state, searched by path), so
 * 3,000 photos are about 1 MB and the page opens as fast as a short one; thumbnails are
 * files in a folder beside the report, loaded only for the rows shown.
 */
export function renderReport(p: ReportPage): string {
  const clean = p.clean ?? ((s: string) => s);
  const t = (s: string | null | undefined): string => escapeHtml(clean(s ?? ''));
  const d = p.data;
  const s = d.status;
  const problems = d.problemCount;
  const changed = p.rows.filter((r) => formatChanged(r.input, r.output)).length;

  const title = `darkroom report — ${s.done}/${s.total} done`;
  const out: string[] = [];
  out.push(
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${t(title)}</title>`,
    `<style>${CSS}${PHOTOS_CSS}</style>`,
    '</head>',
    '<body>',
  );

  // ── header ──────────────────────────────────────────────────────────────────
  out.push('<header class="top">', '<h1>darkroom report</h1>', '<dl class="meta">');
  out.push(row('Job file', p.jobsFile ? `<code>${t(p.jobsFile)}</code>` : '<span class="muted">none given (ledger only)</span>'));
  out.push(row('Ledger', `<code>${t(p.ledgerFile)}</code>`));
  if (p.inputDir) out.push(row('Input folder', `<code>${t(p.inputDir)}</code>`));
  if (p.outputDir) out.push(row('Output folder', `<code>${t(p.outputDir)}</code>`));
  out.push(row('Generated', t(formatTime(p.generatedMs))));
  out.push(
    row(
      'Run span',
      d.span
        ? `${t(formatTime(d.span.startMs))} → ${t(formatTime(d.span.endMs))} <span class="muted">(${t(formatDuration(d.span.endMs - d.span.startMs))})</span>`
        : '<span class="muted">nothing recorded yet</span>',
    ),
  );
  out.push('</dl>');

  out.push('<div class="totals" id="totals">');
  out.push(card('total', 'photos', s.total));
  out.push(card('done', 'done', s.done));
  out.push(card('failed', s.skipped ? `failed <small>(${s.skipped} skipped)</small>` : 'failed', s.failed));
  out.push(card('held', 'held', s.held));
  out.push(card('pending', 'pending', s.pending));
  if (s.gone > 0) out.push(card('gone', 'gone <small>(input removed)</small>', s.gone));
  out.push(card('calls', 'calls made', d.calls.total));
  out.push(card('credits', p.credits.unknown.length ? 'credits <small>(known part)</small>' : 'credits spent', p.credits.known));
  out.push('</div>');
  out.push(progressBar(s.total, s.done, s.failed, s.held, s.pending));
  out.push(
    '<nav class="toc">',
    `<a href="#attention">Needs attention (${problems})</a>`,
    `<a href="#photos">Photos (${d.photoCount})</a>`,
    '<a href="#figures">Run figures</a>',
    '</nav>',
  );
  out.push('</header>');
  out.push('<main>');

  // ── figures + chart ─────────────────────────────────────────────────────────
  out.push('<section id="figures">', '<h2>Run figures</h2>', '<div class="figrow">', '<dl class="figures">');
  const act = d.activity;
  const perHour = act.activeMs > 0 ? act.doneItems / (act.activeMs / 3_600_000) : 0;
  out.push(
    fig(
      'Throughput',
      act.doneItems > 0 && act.activeMs > 0 ? `${formatNumber(perHour, perHour < 10 ? 1 : 0)} photos / hour` : '–',
      `${formatNumber(act.doneItems)} photos done in ${formatDuration(act.activeMs)} of active time` +
        ` (${act.sessions} stretch${act.sessions === 1 ? '' : 'es'} of work; gaps over ${formatDuration(act.idleGapMs)} between recorded events left out)`,
    ),
  );
  out.push(
    fig(
      'Credits spent',
      p.credits.unknown.length
        ? `${formatNumber(p.credits.known)} + ${p.credits.unknown.map((u) => `${u.tasks} ${u.capability} task${u.tasks === 1 ? '' : 's'}`).join(' + ')} of unknown cost`
        : formatNumber(p.credits.known),
      p.credits.source,
    ),
  );
  out.push(fig('Format changes', formatNumber(changed), 'done photos whose output is in another format than their input (e.g. a PNG that came back as JPEG)'));
  out.push(
    fig(
      'Calls per photo',
      s.done > 0 ? formatNumber(d.calls.total / s.done, 1) : '–',
      s.done > 0 ? `${formatNumber(d.calls.total)} calls for ${formatNumber(s.done)} done photos` : 'no photo done yet',
    ),
  );
  out.push(
    fig(
      'Mean task latency',
      d.tasks.meanLatencyMs === null ? '–' : formatDuration(d.tasks.meanLatencyMs),
      'from the accepted create to the poll that saw SUCCESS',
    ),
  );
  out.push(
    fig(
      'Tasks created',
      formatNumber(d.tasks.created),
      d.tasks.created > 0 ? `${formatNumber(d.tasks.polls / d.tasks.created, 1)} polls per task` : '',
    ),
  );
  out.push(
    fig(
      'Refused calls',
      `${formatNumber(d.calls.limited)} × 429 · ${formatNumber(d.calls.serverErrors)} × 5xx`,
      'rate limited or service errors',
    ),
  );
  out.push('</dl>');
  out.push(
    '<figure class="chartbox">',
    throughputSvg(d.throughput.buckets, d.throughput.bucketMs),
    `<figcaption>Photos done per ${t(formatBucket(d.throughput.bucketMs))}, from item transitions to <code>done</code>.</figcaption>`,
    '</figure>',
  );
  out.push('</div>');
  out.push('</section>');

  // ── problems ────────────────────────────────────────────────────────────────
  out.push('<section id="attention">', `<h2>Needs attention <span class="count">${problems}</span></h2>`);
  if (problems === 0) {
    out.push('<p class="ok">Nothing failed, was skipped or is held.</p>');
  } else {
    const counts = (['held', 'failed', 'skipped'] as const)
      .map((k) => [k, d.problems.filter((x) => x.state === k).length] as const)
      .filter(([, n]) => n > 0);
    out.push(
      `<p>${counts.map(([k, n]) => `${n} ${k}`).join(' · ')}${d.problems.length < problems ? ` (first ${d.problems.length} of ${problems} shown)` : ''}.` +
        (s.held > 0
          ? ' Held photos may have a task on the service already: check the requestIds with support if unsure, then <code>darkroom retry --held</code>.'
          : '') +
        '</p>',
    );
    out.push(
      '<div class="tablewrap"><table class="problems" id="problems">',
      '<thead><tr><th>State</th><th>Photo</th><th>Step</th><th>Reason</th><th>X-Request-Id sent</th><th>requestId</th><th>Task</th><th>When</th></tr></thead>',
      '<tbody>',
    );
    for (const x of d.problems) out.push(problemRow(x, t));
    out.push('</tbody></table></div>');
  }
  out.push('</section>');

  // ── photos ──────────────────────────────────────────────────────────────────
  out.push('<section id="photos">', `<h2>Photos <span class="count">${formatNumber(d.photoCount)}</span></h2>`);
  if (d.photos.length < d.photoCount) out.push(`<p class="warn">The first ${formatNumber(d.photos.length)} by path are listed.</p>`);
  if (p.thumbsHref === null) out.push('<p class="muted">No thumbnails: the report was written to a stream; give <code>--thumbs DIR</code> for them.</p>');
  out.push(photosControls(p.rows));
  out.push(
    '<div class="tablewrap"><table class="photos" id="photo-table">',
    '<thead><tr><th>Photo</th><th>State</th><th>Before</th><th>After</th><th>In</th><th>Out</th></tr></thead>',
    '<tbody id="photo-rows"></tbody></table></div>',
    '<noscript><p class="warn">The photo list needs JavaScript; the figures above do not.</p></noscript>',
  );
  out.push(`<script type="application/json" id="photo-data">${photosJson(p.rows, p.thumbsHref, clean)}</script>`);
  out.push(`<script>${PHOTOS_SCRIPT}</script>`);
  out.push('</section>');

  // ── details ─────────────────────────────────────────────────────────────────
  out.push('<section id="details">', '<h2>Details</h2>', '<div class="detailrow">');
  if (d.tasks.latency.length > 0) {
    out.push('<table class="small"><caption>Task latency by capability</caption>');
    out.push('<thead><tr><th>Capability</th><th class="num">Tasks</th><th class="num">Mean</th><th class="num">Min</th><th class="num">Max</th></tr></thead><tbody>');
    for (const l of d.tasks.latency) {
      out.push(
        `<tr><td>${t(l.capability)}</td><td class="num">${l.tasks}</td><td class="num">${t(formatDuration(l.meanMs))}</td>` +
          `<td class="num">${t(formatDuration(l.minMs))}</td><td class="num">${t(formatDuration(l.maxMs))}</td></tr>`,
      );
    }
    out.push('</tbody></table>');
  }
  if (d.calls.byEndpoint.length > 0) {
    out.push('<table class="small"><caption>Calls by endpoint</caption>');
    out.push('<thead><tr><th>Method</th><th>Endpoint</th><th class="num">Calls</th></tr></thead><tbody>');
    for (const c of d.calls.byEndpoint) {
      out.push(`<tr><td>${t(c.method)}</td><td><code>${t(c.endpoint)}</code></td><td class="num">${formatNumber(c.n)}</td></tr>`);
    }
    out.push('</tbody></table>');
  }
  if (d.calls.byKey.length > 0) {
    out.push('<table class="small"><caption>Calls by API key (fingerprint)</caption>');
    out.push('<thead><tr><th>Key</th><th class="num">Calls</th></tr></thead><tbody>');
    for (const k of d.calls.byKey) out.push(`<tr><td><code>${t(k.keyFp)}</code></td><td class="num">${formatNumber(k.n)}</td></tr>`);
    out.push('</tbody></table>');
  }
  const busy = Object.entries(s.states).filter(([k, n]) => n > 0 && !TERMINAL.has(k as ItemState));
  if (busy.length > 0) {
    out.push('<table class="small"><caption>Photos still in work</caption><thead><tr><th>State</th><th class="num">Photos</th></tr></thead><tbody>');
    for (const [k, n] of busy) out.push(`<tr><td>${t(k)}</td><td class="num">${formatNumber(n)}</td></tr>`);
    out.push('</tbody></table>');
  }
  out.push('</div>', '</section>');

  out.push('</main>', `<footer>darkroom · ${t(formatTime(p.generatedMs))} · read from the ledger alone; no key is stored in it or shown here.</footer>`);
  out.push('</body>', '</html>', '');
  return out.join('\n');
}

function row(label: string, html: string): string {
  return `<div><dt>${label}</dt><dd>${html}</dd></div>`;
}

function card(kind: string, label: string, n: number): string {
  return `<div class="card ${kind}" data-kind="${kind}"><span class="n">${formatNumber(n)}</span><span class="l">${label}</span></div>`;
}

function fig(label: string, value: string, note: string): string {
  return `<div><dt>${escapeHtml(label)}</dt><dd><span class="v">${escapeHtml(value)}</span>${note ? `<span class="note">${escapeHtml(note)}</span>` : ''}</dd></div>`;
}

function progressBar(total: number, done: number, failed: number, held: number, pending: number): string {
  if (total === 0) return '';
  const seg = (cls: string, n: number, label: string) =>
    n > 0 ? `<span class="${cls}" style="width:${((n / total) * 100).toFixed(3)}%" title="${n} ${label}"></span>` : '';
  return `<div class="progress" aria-hidden="true">${seg('done', done, 'done')}${seg('failed', failed, 'failed')}${seg('held', held, 'held')}${seg('pending', pending, 'pending')}</div>`;
}

function problemRow(x: ReportProblem, t: (s: string | null | undefined) => string): string {
  const code = (v: string | null) => (v ? `<code>${t(v)}</code>` : '<span class="muted">–</span>');
  return (
    `<tr class="${x.state}" data-state="${x.state}">` +
    `<td><span class="badge ${x.state}">${x.state}</span></td>` +
    `<td class="path">${t(x.path)}</td>` +
    `<td class="num">${x.step + 1}</td>` +
    `<td class="reason">${x.reason ? t(x.reason) : '<span class="muted">no reason recorded</span>'}</td>` +
    `<td>${code(x.sentRequestId)}</td>` +
    `<td>${code(x.requestId)}</td>` +
    `<td>${code(x.taskId)}</td>` +
    `<td class="when">${t(formatTime(x.atMs))}</td>` +
    '</tr>'
  );
}

function photosControls(rows: readonly ReportRow[]): string {
  const n = (g: string) => rows.filter((r) => stateGroup(r.photo.state) === g).length;
  const problems = rows.filter((r) => ['failed', 'held', 'skipped', 'gone'].includes(stateGroup(r.photo.state))).length;
  const changed = rows.filter((r) => formatChanged(r.input, r.output)).length;
  const opt = (v: string, label: string, count: number) => `<option value="${v}">${label} (${formatNumber(count)})</option>`;
  return (
    '<div class="controls">' +
    '<label>Show <select id="state-filter">' +
    opt('all', 'all', rows.length) +
    opt('problems', 'problems', problems) +
    STATE_GROUPS.map((g) => opt(g, g, n(g))).join('') +
    opt('changed', 'format changed', changed) +
    '</select></label>' +
    '<label>Path <input id="path-filter" type="search" placeholder="part of a path"></label>' +
    '<span class="pager"><button type="button" id="prev-page">‹ previous</button> <span id="page-info"></span> <button type="button" id="next-page">next ›</button></span>' +
    '</div>'
  );
}

type JsonFacts = { f: string; w: number; h: number; b: number; t: string | null } | { x: string; d: string };

/** The rows as compact JSON for the script, every text already cleaned; safe inside a script element. */
function photosJson(rows: readonly ReportRow[], thumbsHref: string | null, clean: (s: string) => string): string {
  const facts = (f: FileFacts): JsonFacts => (f.ok ? { f: f.format, w: f.width, h: f.height, b: f.bytes, t: f.thumb } : { x: f.why, d: clean(f.detail) });
  const list = rows.map((r) => ({
    p: clean(r.photo.path),
    s: r.photo.state,
    g: stateGroup(r.photo.state),
    k: r.photo.step + 1,
    r: r.photo.reason === null ? null : clean(r.photo.reason),
    i: facts(r.input),
    o: r.output === null ? null : facts(r.output),
    h: r.href,
    c: formatChanged(r.input, r.output) ? 1 : 0,
  }));
  return JSON.stringify({ thumbs: thumbsHref, pageSize: 100, photos: list })
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const CSS = `
:root{--fg:#1d2329;--muted:#6b7580;--line:#dde2e7;--bg:#f6f7f9;--card:#fff;--done:#1f8a4c;--failed:#c62f2f;--held:#b7791f;--pending:#7a8794;--accent:#2b6cb0}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
code{font:12.5px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;word-break:break-all}
header.top{background:var(--card);border-bottom:1px solid var(--line);padding:20px 28px 14px}
h1{margin:0 0 10px;font-size:22px}
h2{font-size:18px;margin:0 0 12px}
h2 .count{display:inline-block;min-width:1.8em;padding:0 .45em;border-radius:1em;background:#e9edf1;color:var(--muted);font-size:13px;text-align:center;vertical-align:2px}
dl.meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:2px 28px;margin:0 0 14px}
dl.meta div{display:flex;gap:10px;min-width:0}
dl.meta dt{flex:0 0 96px;color:var(--muted)}
dl.meta dd{margin:0;min-width:0}
.totals{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:10px}
.card{flex:1 1 110px;border:1px solid var(--line);border-radius:8px;padding:8px 14px;background:#fbfcfd;border-top:4px solid var(--pending)}
.card .n{display:block;font-size:26px;font-weight:650;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:13px}
.card.done{border-top-color:var(--done)}.card.failed{border-top-color:var(--failed)}.card.held{border-top-color:var(--held)}
.card.total,.card.calls{border-top-color:var(--accent)}
.progress{display:flex;height:8px;border-radius:4px;overflow:hidden;background:#e9edf1;margin:4px 0 10px}
.progress span{display:block;height:100%}
.progress .done{background:var(--done)}.progress .failed{background:var(--failed)}.progress .held{background:var(--held)}.progress .pending{background:#b8c1ca}
nav.toc{display:flex;gap:18px;font-size:14px}
nav.toc a{color:var(--accent);text-decoration:none}
main{padding:8px 28px 28px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px;margin:16px 0}
.figrow{display:flex;flex-wrap:wrap;gap:20px;align-items:flex-start}
dl.figures{flex:1 1 300px;margin:0;display:grid;grid-template-columns:1fr;gap:8px}
dl.figures div{display:grid;grid-template-columns:150px 1fr;gap:8px}
dl.figures dt{color:var(--muted)}
dl.figures dd{margin:0}
dl.figures .v{font-weight:600;font-variant-numeric:tabular-nums}
dl.figures .note{display:block;color:var(--muted);font-size:12.5px}
figure.chartbox{flex:2 1 480px;margin:0;min-width:0}
figure.chartbox svg{width:100%;height:auto;max-width:760px;display:block}
figure.chartbox figcaption{color:var(--muted);font-size:12.5px}
svg .col{fill:var(--done)}
svg .grid{stroke:#e6eaee;stroke-width:1}
svg .axis{stroke:#9aa4ae;stroke-width:1}
svg .tick{fill:var(--muted);font:11px system-ui,sans-serif}
svg .empty{fill:var(--muted);font:13px system-ui,sans-serif}
.tablewrap{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12.5px;color:var(--muted);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.reason{min-width:240px}
td.when{white-space:nowrap;color:var(--muted);font-size:13px}
td.path{overflow-wrap:anywhere;min-width:160px}
td code{word-break:normal;overflow-wrap:anywhere}
tr.held td{background:#fffaf0}tr.failed td{background:#fff6f6}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;background:var(--pending)}
.badge.failed{background:var(--failed)}.badge.held{background:var(--held)}.badge.skipped{background:#8a6d9e}
p.ok{color:var(--done);margin:0}
p.warn{color:var(--held)}
.muted{color:var(--muted)}
.pairs{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px}
article.pair{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:#fbfcfd;min-width:0}
article.pair h3{margin:0 0 8px;font-size:14px;font-weight:600;word-break:break-all}
.imgs{display:flex;gap:10px}
.imgs figure{margin:0;flex:1 1 0;min-width:0}
.frame{height:240px;display:flex;align-items:center;justify-content:center;border-radius:6px;overflow:hidden;
  background-color:#eef1f4;background-image:linear-gradient(45deg,#e3e7eb 25%,transparent 25%,transparent 75%,#e3e7eb 75%),linear-gradient(45deg,#e3e7eb 25%,transparent 25%,transparent 75%,#e3e7eb 75%);
  background-size:16px 16px;background-position:0 0,8px 8px}
.frame img{max-width:100%;max-height:100%;width:auto;height:auto;display:block}
.frame.placeholder{flex-direction:column;gap:6px;padding:12px;background:#fff;border:2px dashed #d7a3a3;color:var(--failed);text-align:center}
.frame.placeholder span{color:var(--muted);font-size:12px;word-break:break-all}
.imgs figcaption{font-size:12px;color:var(--muted);text-align:center;margin-top:3px}
ol.steps{margin:8px 0 2px;padding-left:20px;font-size:13px}
ol.steps .cap{font-weight:600}
p.when{margin:2px 0 0;font-size:12px;color:var(--muted)}
p.more{font-style:italic;color:var(--muted)}
.detailrow{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}
.detailrow table{flex:1 1 300px;width:auto}
caption{text-align:left;font-weight:600;padding-bottom:6px}
footer{color:var(--muted);font-size:12px;padding:0 28px 24px}
@media (max-width:640px){.pairs{grid-template-columns:1fr}.frame{height:180px}main,header.top{padding-left:12px;padding-right:12px}}
`.replace(/\n/g, '');
