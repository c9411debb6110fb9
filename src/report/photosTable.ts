/**
 * The photo table's script and style, inline in the report. The script reads the JSON block
 * (#photo-data) and draws one page of rows at a time: filter by state (or "problems", or
 * "format changed"), search by path, previous/next. The page opens with the first page of
 * all photos drawn; only the images of the rows drawn are ever requested (and lazily).
 * Written as plain ES2017 with no library: the report must open from a file with no network.
 */
export const PHOTOS_SCRIPT = String.raw`(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('photo-data').textContent);
  var rows = data.photos;
  var tbody = document.getElementById('photo-rows');
  var stateSel = document.getElementById('state-filter');
  var pathIn = document.getElementById('path-filter');
  var info = document.getElementById('page-info');
  var prev = document.getElementById('prev-page');
  var next = document.getElementById('next-page');
  var page = 0;
  var PROBLEMS = { failed: 1, held: 1, skipped: 1, gone: 1 };
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function bytes(n) {
    if (n < 1024) return n + ' B';
    var u = ['KB', 'MB', 'GB', 'TB'], v = n / 1024, i = 0;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return v.toFixed(v < 10 ? 1 : 0) + ' ' + u[i];
  }
  function fmt(f) { return f === 'jpeg' ? 'JPEG' : String(f).toUpperCase(); }
  function facts(f, other) {
    if (!f) return '<span class="muted">–</span>';
    if (f.x) return '<span class="missing">' + esc(f.x) + '</span> <span class="muted">' + esc(f.d) + '</span>';
    return '<span class="fmt">' + esc(fmt(f.f)) + '</span> · ' + f.w + '×' + f.h + ' · ' + esc(bytes(f.b));
  }
  function thumb(f, which, p) {
    if (!f) return '<div class="thumb none"></div>';
    if (f.x) return '<div class="thumb placeholder" title="' + esc(f.d) + '">' + esc(which) + ' ' + esc(f.x) + '</div>';
    if (!f.t || data.thumbs === null) return '<div class="thumb none"></div>';
    return '<img class="thumb" loading="lazy" decoding="async" src="' + esc(data.thumbs + '/' + f.t) + '" alt="' + esc(which + ': ' + p) + '">';
  }
  // What the output carries of the input's metadata, and that it says an AI altered it.
  function meta(m) {
    if (!m) return '<span class="muted">–</span>';
    var ai = m.l === 'none' ? '' : '<div class="ai">AI disclosed</div>';
    var carried = m.l === 'all' || m.l === 'basic';
    if (m.n && !carried) return '<div class="missing">metadata not carried</div><div class="reason">' + esc(m.n) + '</div>' + ai;
    var warned = m.n ? '<div class="missing">carried with a warning</div><div class="reason">' + esc(m.n) + '</div>' : '';
    if (m.l === 'none') return '<span class="muted">none (output.metadata: none)</span>';
    if (m.l === 'provenance') return ai;
    var taken = m.t ? '<div>taken ' + esc(m.t) + '</div>' : '<div class="muted">no date taken in the input</div>';
    var caption = m.c ? '<div class="caption">“' + esc(m.c) + '”</div>' : '<div class="muted">no caption in the input</div>';
    var side = m.s ? '<div class="sidecar">with its XMP sidecar ' + m.s.map(esc).join(', ') + '</div>' : '';
    return taken + caption + side + warned + ai;
  }
  function matches(r, state, q) {
    if (state === 'problems' ? !PROBLEMS[r.g] : state === 'changed' ? !r.c : state !== 'all' && r.g !== state) return false;
    return q === '' || [r.p].concat(r.a).some(function (p) { return p.toLowerCase().indexOf(q) >= 0; });
  }
  function row(r) {
    var link = r.h ? ' <a class="full" href="' + esc(r.h) + '">full size</a>' : '';
    // The same bytes under other names: one photo, paid once (each name gets its output).
    var also = r.a.length ? '<div class="also muted">also as ' + r.a.map(esc).join(', ') + '</div>' : '';
    var why = r.r ? '<div class="reason">' + esc(r.r) + '</div>' : '';
    var step = PROBLEMS[r.g] && r.g !== 'gone' ? ' <span class="muted">step ' + r.k + '</span>' : '';
    if (r.g === 'done') why += '<div class="review ' + (r.v || 'none') + '">' + (r.v === 'accept' ? 'accepted' : r.v === 'reject' ? 'rejected' : 'not reviewed') +
      (r.w ? ': ' + esc(r.w) : '') + '</div>';
    var flag = r.c ? '<div class="flag changed">format changed: ' + esc(fmt(r.i.f)) + ' → ' + esc(fmt(r.o.f)) + '</div>' : '';
    return '<tr data-state="' + esc(r.g) + '"' + (r.c ? ' class="fmt-changed"' : '') + '>' +
      '<td class="path"><span class="p">' + esc(r.p) + '</span>' + link + also + '</td>' +
      '<td><span class="badge ' + esc(r.g) + '">' + esc(r.s) + '</span>' + step + why + '</td>' +
      '<td>' + thumb(r.i, 'input', r.p) + '</td>' +
      '<td>' + (r.o ? thumb(r.o, 'output', r.p) : '<div class="thumb none"></div>') + '</td>' +
      '<td class="facts">' + facts(r.i) + '</td>' +
      '<td class="facts">' + facts(r.o) + flag + '</td>' +
      '<td class="meta">' + meta(r.m) + '</td>' +
      '</tr>';
  }
  function draw() {
    var state = stateSel.value, q = pathIn.value.trim().toLowerCase();
    var shown = rows.filter(function (r) { return matches(r, state, q); });
    var pages = Math.max(1, Math.ceil(shown.length / data.pageSize));
    if (page >= pages) page = pages - 1;
    var slice = shown.slice(page * data.pageSize, (page + 1) * data.pageSize);
    tbody.innerHTML = slice.length ? slice.map(row).join('') : '<tr><td colspan="7" class="muted">No photo matches.</td></tr>';
    info.textContent = shown.length + ' photo' + (shown.length === 1 ? '' : 's') + ' · page ' + (page + 1) + ' of ' + pages;
    prev.disabled = page === 0;
    next.disabled = page >= pages - 1;
  }
  stateSel.addEventListener('change', function () { page = 0; draw(); });
  pathIn.addEventListener('input', function () { page = 0; draw(); });
  prev.addEventListener('click', function () { page--; draw(); });
  next.addEventListener('click', function () { page++; draw(); });
  draw();
})();`;

export const PHOTOS_CSS = `
.controls{display:flex;flex-wrap:wrap;gap:16px;align-items:center;margin-bottom:10px;font-size:14px}
.controls select,.controls input{font:inherit;margin-left:6px}
.pager button{font:inherit}
table.photos td{vertical-align:middle}
table.photos td.path{max-width:340px;overflow-wrap:anywhere}
table.photos td.path .p{font-weight:600}
table.photos a.full{font-size:12.5px;color:var(--accent);white-space:nowrap}
table.photos td.facts{font-size:13px;font-variant-numeric:tabular-nums}
table.photos .fmt{font-weight:600}
table.photos .reason{font-size:12.5px;color:var(--muted);min-width:200px;max-width:360px;white-space:normal;overflow-wrap:anywhere}
.thumb{display:block;width:auto;height:auto;max-width:120px;max-height:90px;border-radius:4px}
div.thumb{width:120px;height:60px}
div.thumb.placeholder{display:flex;align-items:center;justify-content:center;border:2px dashed #d7a3a3;color:var(--failed);font-size:12px;text-align:center}
.flag.changed{display:inline-block;margin-top:3px;padding:0 6px;border-radius:8px;background:#fdecc8;color:#7a4d00;font-size:12px;font-weight:600}
tr.fmt-changed td{background:#fffbef}
.missing{color:var(--failed);font-weight:600}
table.photos td.meta{font-size:12.5px;min-width:160px;max-width:300px;overflow-wrap:anywhere}
table.photos td.meta .caption{font-style:italic}
table.photos td.meta .ai{display:inline-block;margin-top:3px;padding:0 6px;border-radius:8px;background:#e4ecf7;color:#234;font-size:12px}
.review{font-size:12.5px;color:var(--muted)}.review.accept{color:var(--done)}.review.reject{color:var(--failed)}
.badge.done{background:var(--done)}.badge.gone{background:#6b7580}.badge.pending{background:#9aa4ae}
`.replace(/\n/g, '');
