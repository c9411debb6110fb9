import { TERMINAL, type ItemState, type ReportData, type ReportProblem } from '../ledger/index.js';
import { throughputSvg } from './chart.js';
import type { CreditsSpent } from './credits.js';
import { escapeHtml, formatBucket, formatDuration, formatNumber, formatTime } from './format.js';
import { photosControls, photosJson } from './photosData.js';
import { PHOTOS_CSS, PHOTOS_SCRIPT } from './photosTable.js';
import { formatChanged, type ReportRow, type StateGroup } from './rows.js';
import { REPORT_CSS } from './style.js';

/** Text from the ledger or the files, cleaned and escaped for the page. */
type Text = (s: string | null | undefined) => string;

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
  /**
   * An archive larger than one page: the photos are on pages of their own (renderPhotosPage),
   * this page lists them, and the figures that count every photo's files are given here.
   */
  readonly pages?: PhotoPages;
}

/** The pages of photos of a report too large for one (report/index.ts), as the summary lists them. */
export interface PhotoPages {
  /** Photos a page holds at most. */
  readonly size: number;
  /** Each page: its link from the summary, its first and last photo, and its photos by state group. */
  readonly list: readonly PhotoPageEntry[];
  /** Done photos whose output is in another format than their input, over every page. */
  readonly formatChanges: number;
  /** False: the report went to a stream, so no page was written beside it. */
  readonly written: boolean;
}

export interface PhotoPageEntry {
  readonly href: string;
  readonly first: string;
  readonly last: string;
  readonly counts: Readonly<Record<StateGroup | 'changed', number>>;
}

/**
 * The whole report: one HTML file with its CSS and a small script inline. The photos are a
 * JSON block the script shows a page at a time (filtered by state, searched by path), so
 * 3,000 photos are about 1 MB and the page opens as fast as a short one; thumbnails are
 * files in a folder beside the report, loaded only for the rows shown.
 */
export function renderReport(p: ReportPage): string {
  const clean = p.clean ?? ((s: string) => s);
  const t: Text = (s) => escapeHtml(clean(s ?? ''));
  const s = p.data.status;
  const out = pageHead(`darkroom report — ${s.done}/${s.total} done`, t);
  headerSection(p, t, out);
  figuresSection(p, t, out);
  attentionSection(p, t, out);
  if (p.pages) pagesSection(p, p.pages, t, out);
  else photosSection({ rows: p.rows, thumbsHref: p.thumbsHref, clean, count: p.data.photoCount }, out);
  detailsSection(p, t, out);
  out.push('</main>', footer(p.generatedMs, t), '</body>', '</html>', '');
  return out.join('\n');
}

/** One page of photos of a report too large for one page: its photos' table, and links to the summary and the pages beside it. */
export interface PhotosPage {
  /** The 1-based number of its first photo, of how many in all. */
  readonly from: number;
  readonly of: number;
  readonly rows: readonly ReportRow[];
  readonly thumbsHref: string | null;
  /** Links from this page: the summary, and the pages before and after it (null at the ends). */
  readonly summaryHref: string;
  readonly previousHref: string | null;
  readonly nextHref: string | null;
  readonly generatedMs: number;
  readonly clean?: (s: string) => string;
}

export function renderPhotosPage(p: PhotosPage): string {
  const clean = p.clean ?? ((s: string) => s);
  const t: Text = (s) => escapeHtml(clean(s ?? ''));
  const span = `photos ${formatNumber(p.from)}–${formatNumber(p.from + p.rows.length - 1)} of ${formatNumber(p.of)}`;
  const out = pageHead(`darkroom report — ${span}`, t);
  const link = (href: string | null, label: string) =>
    href === null ? `<span class="muted">${label}</span>` : `<a href="${escapeHtml(href)}">${label}</a>`;
  out.push(
    '<header class="top">',
    `<h1>darkroom report: ${t(span)}</h1>`,
    '<nav class="toc">',
    link(p.summaryHref, 'the summary'),
    link(p.previousHref, '‹ previous page'),
    link(p.nextHref, 'next page ›'),
    '</nav>',
    '</header>',
    '<main>',
  );
  photosSection({ rows: p.rows, thumbsHref: p.thumbsHref, clean, count: p.rows.length }, out);
  out.push('</main>', footer(p.generatedMs, t), '</body>', '</html>', '');
  return out.join('\n');
}

function pageHead(title: string, t: Text): string[] {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${t(title)}</title>`,
    `<style>${REPORT_CSS}${PHOTOS_CSS}</style>`,
    '</head>',
    '<body>',
  ];
}

function footer(generatedMs: number, t: Text): string {
  return `<footer>darkroom · ${t(formatTime(generatedMs))} · read from the ledger alone; no key is stored in it or shown here.</footer>`;
}

/** The page's head: the job, the ledger, the span of the run, the totals and the contents. */
function headerSection(p: ReportPage, t: Text, out: string[]): void {
  const d = p.data;
  const s = d.status;
  const problems = d.problemCount;
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
  out.push(card('failed', 'failed', s.failed));
  out.push(card('held', 'held', s.held));
  // Paid for and not yet on disk is pending, not failed (a rerun downloads it first): said apart, as status says it.
  out.push(
    card(
      'pending',
      s.paidNotDownloaded ? `pending <small>(${formatNumber(s.paidNotDownloaded)} paid, not yet downloaded)</small>` : 'pending',
      s.pending,
    ),
  );
  if (s.skipped > 0) out.push(card('skipped', 'skipped <small>(not sent: not in the total)</small>', s.skipped));
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
}

/** Run figures: throughput, credits, calls and tasks, and the throughput chart. */
function figuresSection(p: ReportPage, t: Text, out: string[]): void {
  const d = p.data;
  const s = d.status;
  const changed = p.pages?.formatChanges ?? p.rows.filter((r) => formatChanged(r.input, r.output)).length;
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
  out.push(
    fig(
      'Format changes',
      formatNumber(changed),
      'done photos whose output is in another format than their input (e.g. a PNG that came back as JPEG)',
    ),
  );
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
}

/** What needs attention: failed, skipped and held photos with their reasons and request ids. */
function attentionSection(p: ReportPage, t: Text, out: string[]): void {
  const d = p.data;
  const s = d.status;
  const problems = d.problemCount;
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
}

/** The photos: a JSON block the page's script shows a page at a time, with its controls. */
function photosSection(
  p: { rows: readonly ReportRow[]; thumbsHref: string | null; clean: (s: string) => string; count: number },
  out: string[],
): void {
  out.push('<section id="photos">', `<h2>Photos <span class="count">${formatNumber(p.count)}</span></h2>`);
  if (p.rows.length < p.count) out.push(`<p class="warn">The first ${formatNumber(p.rows.length)} by path are listed.</p>`);
  if (p.thumbsHref === null)
    out.push(
      '<p class="muted">No thumbnails: the report was written to a stream, or with <code>--no-thumbs</code>; give <code>--thumbs DIR</code> for them.</p>',
    );
  out.push(photosControls(p.rows));
  out.push(
    '<div class="tablewrap"><table class="photos" id="photo-table">',
    '<thead><tr><th>Photo</th><th>State</th><th>Before</th><th>After</th><th>In</th><th>Out</th><th>Metadata</th></tr></thead>',
    '<tbody id="photo-rows"></tbody></table></div>',
    '<noscript><p class="warn">The photo list needs JavaScript; the figures above do not.</p></noscript>',
  );
  out.push(`<script type="application/json" id="photo-data">${photosJson(p.rows, p.thumbsHref, p.clean)}</script>`);
  out.push(`<script>${PHOTOS_SCRIPT}</script>`);
  out.push('</section>');
}

/** The photos of an archive too large for one page: the pages they are on, each with its first and last photo and its counts. */
function pagesSection(p: ReportPage, pages: PhotoPages, t: Text, out: string[]): void {
  const d = p.data;
  const n = pages.list.length;
  out.push('<section id="photos">', `<h2>Photos <span class="count">${formatNumber(d.photoCount)}</span></h2>`);
  if (!pages.written) {
    out.push(
      `<p class="warn">${formatNumber(d.photoCount)} photos are more than one page holds (${formatNumber(pages.size)}): their pages are written beside a report file, not to a stream. Give <code>--out FILE</code> for them.</p>`,
      '</section>',
    );
    return;
  }
  out.push(
    `<p>By path, on ${formatNumber(n)} page${n === 1 ? '' : 's'} of at most ${formatNumber(pages.size)} photos; each page filters and searches its own. ` +
      'The problems are listed above; to look at the photos one by one, input beside output, use <code>darkroom review</code>.</p>',
  );
  const groups = ['done', 'failed', 'held', 'skipped', 'gone', 'pending'] as const;
  out.push(
    '<div class="tablewrap"><table class="small pages" id="photo-pages">',
    `<thead><tr><th>Page</th><th>From</th><th>To</th>${groups.map((g) => `<th class="num">${g}</th>`).join('')}<th class="num">format changed</th></tr></thead>`,
    '<tbody>',
  );
  for (const [i, e] of pages.list.entries()) {
    out.push(
      `<tr><td><a href="${escapeHtml(e.href)}">${i + 1}</a></td><td class="path">${t(e.first)}</td><td class="path">${t(e.last)}</td>` +
        groups.map((g) => `<td class="num">${formatNumber(e.counts[g])}</td>`).join('') +
        `<td class="num">${formatNumber(e.counts.changed)}</td></tr>`,
    );
  }
  out.push('</tbody></table></div>', '</section>');
}

/** Details: task latency by capability, calls by endpoint and by key, photos still in work. */
function detailsSection(p: ReportPage, t: Text, out: string[]): void {
  const d = p.data;
  const s = d.status;
  out.push('<section id="details">', '<h2>Details</h2>', '<div class="detailrow">');
  if (d.tasks.latency.length > 0) {
    out.push('<table class="small"><caption>Task latency by capability</caption>');
    out.push(
      '<thead><tr><th>Capability</th><th class="num">Tasks</th><th class="num">Mean</th><th class="num">Min</th><th class="num">Max</th></tr></thead><tbody>',
    );
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
    out.push(
      '<table class="small"><caption>Photos still in work</caption><thead><tr><th>State</th><th class="num">Photos</th></tr></thead><tbody>',
    );
    for (const [k, n] of busy) out.push(`<tr><td>${t(k)}</td><td class="num">${formatNumber(n)}</td></tr>`);
    out.push('</tbody></table>');
  }
  out.push('</div>', '</section>');
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
