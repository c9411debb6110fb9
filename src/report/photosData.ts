import { formatNumber } from './format.js';
import { formatChanged, STATE_GROUPS, stateGroup, type ReportRow } from './rows.js';
import type { FileFacts } from './thumbs.js';

/** The photo table's filter controls and its rows as the JSON its script reads (photosTable.ts). */
export function photosControls(rows: readonly ReportRow[]): string {
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

/**
 * What the photo's output carries of its input's metadata, for its row: l the level (all,
 * basic, provenance, none), t when it was taken and c its caption as carried, n why the
 * input's metadata is not there; null when no output was written with this recorded.
 */
function metadataJson(
  r: ReportRow,
  clean: (s: string) => string,
): { l: string; t: string | null; c: string | null; n: string | null; s: string[] | null } | null {
  const p = r.photo;
  if (p.meta === null || p.outputPath === null) return null;
  return {
    l: p.meta,
    t: p.metaTaken === null ? null : clean(p.metaTaken),
    c: p.metaCaption === null ? null : clean(p.metaCaption),
    n: p.metaNote === null ? null : clean(p.metaNote),
    s: p.metaSidecars === null ? null : p.metaSidecars.split('\n').map(clean),
  };
}

type JsonFacts = { f: string; w: number; h: number; b: number; t: string | null } | { x: string; d: string };

/** The rows as compact JSON for the script, every text already cleaned; safe inside a script element. */
export function photosJson(rows: readonly ReportRow[], thumbsHref: string | null, clean: (s: string) => string): string {
  const facts = (f: FileFacts): JsonFacts =>
    f.ok ? { f: f.format, w: f.width, h: f.height, b: f.bytes, t: f.thumb } : { x: f.why, d: clean(f.detail) };
  const list = rows.map((r) => ({
    p: clean(r.photo.path),
    a: r.photo.otherNames === null ? [] : r.photo.otherNames.split('\n').map(clean),
    s: r.photo.state,
    g: stateGroup(r.photo.state),
    k: r.photo.step + 1,
    r: r.photo.reason === null ? null : clean(r.photo.reason),
    i: facts(r.input),
    o: r.output === null ? null : facts(r.output),
    h: r.href,
    c: formatChanged(r.input, r.output) ? 1 : 0,
    m: metadataJson(r, clean),
    // The person's decision in review (darkroom review), and a rejection's reason.
    v: r.photo.review,
    w: r.photo.reviewReason === null ? null : clean(r.photo.reviewReason),
  }));
  return JSON.stringify({ thumbs: thumbsHref, pageSize: 100, photos: list })
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
