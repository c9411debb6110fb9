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

type JsonFacts = { f: string; w: number; h: number; b: number; t: string | null } | { x: string; d: string };

/** The rows as compact JSON for the script, every text already cleaned; safe inside a script element. */
export function photosJson(rows: readonly ReportRow[], thumbsHref: string | null, clean: (s: string) => string): string {
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
