/**
 * The review page: one static HTML file, one script and one style sheet of its own, served by
 * server.ts under a Content-Security-Policy that allows nothing else (no inline script, no
 * other origin). The script is plain ES2017 with no library. It reads the photos of the list
 * shown a window at a time as JSON (`/api/photos`: 200 photos, the next ones as it nears
 * them, and every 2 s what changed since, with the lists' counts from the server), so it holds
 * a few hundred photos whatever the size of the archive; shows one photo at a time, input and
 * output side by side, and takes each decision with the keyboard: Lightroom's keys. Every
 * text from outside is put in the page with textContent (and `new Option`), never as HTML.
 * A decision is shown as made only once the server answered that the ledger has it.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>darkroom review</title>
<link rel="stylesheet" href="/review.css">
<script src="/review.js" defer></script>
</head>
<body>
<header>
  <h1>darkroom review</h1>
  <label>Show <select id="filter">
    <option value="unreviewed">not yet reviewed</option>
    <option value="accepted">accepted</option>
    <option value="rejected">rejected</option>
    <option value="failed">failed</option>
    <option value="held">held</option>
    <option value="all">all done</option>
  </select></label>
  <label>Folder <select id="folder"><option value="*">all folders</option></select></label>
  <span id="position"></span>
  <span id="saying" role="status" aria-live="polite"></span>
</header>
<main id="stage" class="side">
  <figure id="input-frame" class="frame"><figcaption>input</figcaption><div class="view" id="input-view"><img id="input-img" alt="input"><div class="none" id="input-none" hidden></div></div></figure>
  <figure id="output-frame" class="frame"><figcaption>output</figcaption><div class="view" id="output-view"><img id="output-img" alt="output"><div class="none" id="output-none" hidden></div></div></figure>
</main>
<section id="info">
  <div id="path" class="path"></div>
  <div><span id="state" class="badge"></span> <span id="decision" class="badge"></span> <span id="decision-why" class="why"></span></div>
  <div id="taken" class="meta"></div>
  <div id="caption" class="meta caption"></div>
  <div id="reason" class="why"></div>
</section>
<div id="empty" hidden>No photo to show here. New photos appear as a run finishes them.</div>
<div id="reason-box" hidden><label>Why rejected? <input id="reason-input" maxlength="500" autocomplete="off" spellcheck="false"></label>
  <span class="hint">Enter records it (empty is fine) · Esc records the rejection without a reason</span></div>
<footer class="keys"><b>P</b> accept · <b>X</b> reject · <b>U</b> clear · <b>←</b> <b>→</b> previous, next · <b>F</b> flip input/output · <b>S</b> side by side · <b>Z</b> zoom to 100 % (<b>Shift</b>+arrows move) </footer>
</body>
</html>
`;

export const PAGE_CSS = `
:root{--bg:#1d1f22;--fg:#e8e6e3;--muted:#9aa0a6;--accept:#2e8b57;--reject:#c0392b;--held:#b7791f;--line:#3a3d42}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;display:flex;flex-direction:column;height:100vh}
header{display:flex;flex-wrap:wrap;gap:14px;align-items:center;padding:8px 14px;border-bottom:1px solid var(--line)}
header h1{font-size:16px;margin:0 10px 0 0}
select,input{font:inherit;background:#2a2d31;color:var(--fg);border:1px solid var(--line);border-radius:4px;padding:2px 6px}
#position{color:var(--muted);font-variant-numeric:tabular-nums}
#saying{margin-left:auto;color:var(--muted)}
#saying.error{color:#ff8a80}
main{flex:1;display:flex;gap:8px;padding:8px 14px;min-height:0}
.frame{flex:1;margin:0;display:flex;flex-direction:column;min-width:0}
.frame figcaption{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.05em;margin-bottom:4px}
.view{flex:1;overflow:hidden;background:#111;border-radius:4px;position:relative;min-height:0}
.view img{display:block;max-width:100%;max-height:100%;margin:auto;position:absolute;inset:0;object-fit:contain}
main.zoom .view{overflow:auto}
main.zoom .view img{position:static;max-width:none;max-height:none;margin:0}
main.flip .frame{display:none}
main.flip.show-input #input-frame,main.flip.show-output #output-frame{display:flex}
.none{position:absolute;inset:0;display:flex;align-items:center;justify-content:center;color:var(--muted);padding:20px;text-align:center}
#info{padding:6px 14px;border-top:1px solid var(--line)}
.path{font-weight:600;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;background:#44484e}
.badge.accept{background:var(--accept)}.badge.reject{background:var(--reject)}.badge.held{background:var(--held)}.badge.failed,.badge.skipped{background:var(--reject)}
.why,.meta{color:var(--muted);overflow-wrap:anywhere}
.caption{font-style:italic}
#empty{flex:1;display:flex;align-items:center;justify-content:center;color:var(--muted)}
#empty[hidden],#reason-box[hidden],[hidden]{display:none}
#reason-box{position:fixed;left:50%;top:40%;transform:translateX(-50%);background:#2a2d31;border:1px solid var(--line);border-radius:6px;padding:14px 16px;box-shadow:0 6px 30px #000a}
#reason-box input{width:360px;margin-left:6px}
#reason-box .hint{display:block;color:var(--muted);font-size:12px;margin-top:6px}
footer.keys{padding:6px 14px;color:var(--muted);font-size:12px;border-top:1px solid var(--line)}
footer b{color:var(--fg);font-weight:600}
`.trim();

export const PAGE_SCRIPT = String.raw`(function () {
  'use strict';
  var $ = function (id) { return document.getElementById(id); };
  // The window of the list shown: its photos in path order (ids), the photos themselves, how many
  // of the list come before the window (dropped as the window moves on), whether more follow it.
  var photos = new Map();
  var order = [];
  var base = 0;
  var more = false;
  var total = 0;
  var at = 0;
  var cursor = null;
  var filter = 'unreviewed';
  var folder = '*';
  var counts = null;
  var countsV = null;
  var counted = false;
  var folders = [];
  var loading = false;
  var generation = 0;
  var flip = false;
  var flipShows = 'input';
  var zoom = false;
  var rejecting = null;
  var syncing = false;
  var WINDOW = 200;
  var KEEP = 1000;
  var LABELS = { unreviewed: 'not yet reviewed', accepted: 'accepted', rejected: 'rejected', failed: 'failed', held: 'held', all: 'all done' };

  function group(p) {
    if (p.s === 'done') return p.decision === 'accept' ? 'accepted' : p.decision === 'reject' ? 'rejected' : 'unreviewed';
    if (p.s === 'held') return 'held';
    // A photo at work (sent back by retry --rejected, or not finished yet) is in no list until it ends.
    return p.s === 'failed' || p.s === 'skipped' ? 'failed' : 'working';
  }
  function inFilter(p, f) { return f === 'all' ? p.s === 'done' : group(p) === f; }
  function matches(p) { return inFilter(p, filter) && (folder === '*' || String(p.fi) === folder); }
  function cmp(a, b) {
    var x = photos.get(a).p, y = photos.get(b).p;
    return x < y ? -1 : x > y ? 1 : a - b;
  }
  function current() { return order.length ? photos.get(order[at]) : undefined; }

  function say(text, error) {
    var s = $('saying');
    s.textContent = text;
    s.className = error ? 'error' : '';
  }

  function get(query) {
    return fetch('/api/photos?' + query, { credentials: 'same-origin' }).then(function (r) {
      if (!r.ok) throw new Error('HTTP ' + r.status);
      return r.json();
    });
  }
  function windowQuery(extra) {
    return 'filter=' + filter + '&folder=' + encodeURIComponent(folder) + '&limit=' + WINDOW + (countsV === null ? '' : '&v=' + countsV) + extra;
  }
  // The lists' counts, when the server sent them (once it has counted every photo, then when they moved).
  function countsFrom(b) {
    if (!b.counts) return;
    counts = b.counts;
    folders = b.folders;
    countsV = b.v;
    if (more && !counted) total = Math.max(countOf(filter), base + order.length);
    counted = true;
  }
  function take(b) {
    countsFrom(b);
    b.photos.forEach(function (p) { photos.set(p.id, p); });
    return b.photos.map(function (p) { return p.id; });
  }
  function countOf(f) {
    if (!counts) return 0;
    if (folder === '*') return counts[f];
    var e = folders.find(function (x) { return String(x.i) === folder; });
    return e ? e.c[f] : 0;
  }

  // The list from its start: the first window; its size from the server's counts.
  function rebuild() {
    var g = ++generation;
    loading = true;
    return pending = get(windowQuery('')).then(function (b) {
      if (g !== generation) return;
      cursor = cursor || b.cursor;
      photos = new Map();
      order = take(b);
      base = 0;
      at = 0;
      more = b.more;
      counted = !more || counts !== null;
      total = more ? Math.max(countOf(filter), order.length) : order.length;
      loading = false;
      showCounts();
      draw();
      // Which list is shown, once it is (a test waits for it after changing the filter).
      document.body.dataset.list = filter + ' ' + folder;
    }, function (err) { loading = false; say('the review server does not answer (' + err.message + ')', true); });
  }

  // The next window, when the one shown nears its end; the first windows dropped past KEEP photos.
  var pending = Promise.resolve();
  function extend() {
    if (loading) return pending;
    if (!more || !order.length) return Promise.resolve();
    var g = generation;
    loading = true;
    return pending = get(windowQuery('&after=' + encodeURIComponent(photos.get(order[order.length - 1]).p))).then(function (b) {
      loading = false;
      if (g !== generation) return;
      var ids = take(b).filter(function (id) { return order.indexOf(id) < 0; });
      order = order.concat(ids);
      more = b.more;
      if (!more) total = base + order.length;
      var drop = Math.max(0, Math.min(at - WINDOW, order.length - KEEP));
      if (drop > 0) {
        order.splice(0, drop).forEach(function (id) { photos.delete(id); });
        base += drop;
        at -= drop;
      }
      position();
    }, function () { loading = false; });
  }

  // The window before the first one kept, when the page goes back past it.
  function rewind() {
    if (loading) return pending;
    if (base === 0 || !order.length) return Promise.resolve();
    var g = generation;
    loading = true;
    return pending = get(windowQuery('&before=' + encodeURIComponent(photos.get(order[0]).p))).then(function (b) {
      loading = false;
      if (g !== generation) return;
      var ids = take(b).filter(function (id) { return order.indexOf(id) < 0; });
      order = ids.concat(order);
      at += ids.length;
      base = Math.max(0, base - ids.length);
      if (!b.more) base = 0;
    }, function () { loading = false; });
  }

  // Photos that changed: kept in the window as they are (a decided photo stays, so it can be
  // undone), new ones that match added in their place by path when they fall in the window.
  function merge(list) {
    var cur = current();
    var last = order.length ? photos.get(order[order.length - 1]).p : null;
    var first = order.length ? photos.get(order[0]).p : null;
    list.forEach(function (p) {
      var known = photos.has(p.id);
      if (known) photos.set(p.id, p);
      if (known || !matches(p)) return;
      if ((first !== null && p.p < first && base > 0) || (last !== null && p.p > last && more)) return;
      photos.set(p.id, p);
      var i = 0;
      while (i < order.length && cmp(order[i], p.id) < 0) i++;
      order.splice(i, 0, p.id);
      total++;
    });
    if (cur) at = Math.max(0, order.indexOf(cur.id));
    showCounts();
    var now = current();
    if (!cur || !now || now.id !== cur.id || list.some(function (p) { return p.id === now.id; })) draw();
    else position();
  }

  function position() {
    // Before the server has counted the list: as many as are known, and more.
    var of = counted ? String(Math.max(total, base + order.length)) : (base + order.length) + '+';
    $('position').textContent = order.length ? (base + at + 1) + ' / ' + of : '0 / 0';
  }

  function showCounts() {
    if (!counts) {
      // Not counted yet: the lists' names alone.
      var opts = $('filter').options;
      for (var k = 0; k < opts.length; k++) opts[k].textContent = LABELS[opts[k].value];
      return;
    }
    var sel = $('filter');
    for (var i = 0; i < sel.options.length; i++) {
      var o = sel.options[i];
      o.textContent = LABELS[o.value] + ' (' + countOf(o.value) + ')';
    }
    var fs = $('folder');
    while (fs.options.length > 1) fs.remove(1);
    folders.forEach(function (e) {
      fs.add(new Option((e.f === '' ? '(top folder)' : e.f) + ' (' + e.c[filter] + ')', String(e.i)));
    });
    fs.value = folder;
  }

  // A decision this page made: its photo's move from list to list counted at once (the server's
  // counts follow with the next poll).
  function recount(before, after) {
    if (!counts) return;
    var e = folders.find(function (x) { return x.i === after.fi; });
    [counts, e ? e.c : null].forEach(function (c) {
      if (!c) return;
      var was = group(before), now = group(after);
      if (c[was] !== undefined) c[was]--;
      if (c[now] !== undefined) c[now]++;
    });
  }

  function setImg(which, src, none) {
    var img = $(which + '-img');
    var msg = $(which + '-none');
    if (src === null) {
      img.hidden = true;
      img.removeAttribute('src');
      img.dataset.src = '';
      msg.hidden = false;
      msg.textContent = none;
      return;
    }
    msg.hidden = true;
    img.hidden = false;
    if (img.dataset.src !== src) {
      img.dataset.src = src;
      img.src = src;
    }
  }

  function draw() {
    var p = current();
    position();
    $('empty').hidden = !!p;
    $('stage').hidden = !p;
    $('info').hidden = !p;
    if (!p) { $('stage').dataset.id = ''; return; }
    $('stage').dataset.id = String(p.id);
    setImg('input', p.url ? null : '/api/photos/' + p.id + '/input', p.url ? 'a URL input: darkroom keeps no copy of it' : '');
    setImg('output', p.s === 'done' ? '/api/photos/' + p.id + '/output' : null, p.s === 'done' ? '' : 'no output: ' + p.s);
    $('path').textContent = p.p;
    var st = $('state');
    st.textContent = p.s;
    st.className = 'badge ' + p.s;
    var d = $('decision');
    d.hidden = p.s !== 'done';
    d.textContent = p.decision === 'accept' ? 'accepted' : p.decision === 'reject' ? 'rejected' : 'not reviewed';
    d.className = 'badge ' + (p.decision || 'none');
    $('decision-why').textContent = p.decision === 'reject' && p.why ? '“' + p.why + '”' : '';
    $('taken').textContent = p.taken ? 'taken ' + p.taken : '';
    $('caption').textContent = p.caption ? p.caption : '';
    $('reason').textContent = p.r ? 'step ' + p.k + ': ' + p.r : '';
    layout();
    // The next photo's images on their way while this one is looked at.
    var n = order[at + 1] !== undefined ? photos.get(order[at + 1]) : null;
    if (n) {
      if (!n.url) new Image().src = '/api/photos/' + n.id + '/input';
      if (n.s === 'done') new Image().src = '/api/photos/' + n.id + '/output';
    }
  }

  // Zoom to 100 %: both images at the output's own pixel size (the input scaled to match, so the
  // same spot of the picture is in the same place), scrolled together.
  function layout() {
    var stage = $('stage');
    stage.className = (flip ? 'flip show-' + flipShows : 'side') + (zoom ? ' zoom' : '');
    var ii = $('input-img'), oi = $('output-img');
    if (!zoom) {
      ii.style.width = '';
      oi.style.width = '';
      return;
    }
    var w = (oi.naturalWidth && !oi.hidden ? oi.naturalWidth : 0) || ii.naturalWidth || 0;
    if (!w) return;
    ii.style.width = w + 'px';
    oi.style.width = w + 'px';
    ['input-view', 'output-view'].forEach(function (v) {
      var e = $(v);
      e.scrollLeft = (e.scrollWidth - e.clientWidth) / 2;
      e.scrollTop = (e.scrollHeight - e.clientHeight) / 2;
    });
  }

  function sync(from, to) {
    return function () {
      if (syncing || !zoom) return;
      syncing = true;
      var a = $(from), b = $(to);
      var fx = a.scrollWidth > a.clientWidth ? a.scrollLeft / (a.scrollWidth - a.clientWidth) : 0;
      var fy = a.scrollHeight > a.clientHeight ? a.scrollTop / (a.scrollHeight - a.clientHeight) : 0;
      b.scrollLeft = fx * (b.scrollWidth - b.clientWidth);
      b.scrollTop = fy * (b.scrollHeight - b.clientHeight);
      syncing = false;
    };
  }

  function pan(key) {
    var dx = key === 'ArrowLeft' ? -120 : key === 'ArrowRight' ? 120 : 0;
    var dy = key === 'ArrowUp' ? -120 : key === 'ArrowDown' ? 120 : 0;
    var v = flip && flipShows === 'input' ? $('input-view') : $('output-view');
    v.scrollLeft += dx;
    v.scrollTop += dy;
    sync(v.id, v.id === 'input-view' ? 'output-view' : 'input-view')();
  }

  function move(by) {
    if (!order.length) return;
    var go = function () {
      if (at + by < 0 || at + by >= order.length) return false;
      at += by;
      draw();
      return true;
    };
    if (by > 0 && at + by >= order.length - 20) {
      // The next window on its way before it is needed; waited for only at the very end.
      var next = extend();
      if (!go()) next.then(go);
      return;
    }
    if (!go() && by < 0) rewind().then(go);
  }

  function decide(action, reason) {
    var p = current();
    if (!p) return;
    if (p.s !== 'done') { say('only a done photo is reviewed: this one is ' + p.s, true); return; }
    say('saving…');
    fetch('/api/photos/' + p.id + '/decision', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ action: action, sha256: p.h, reason: reason })
    }).then(function (r) {
      return r.json().then(function (b) { return { ok: r.ok, status: r.status, body: b }; }, function () { return { ok: false, status: r.status, body: {} }; });
    }).then(function (x) {
      if (!x.ok) {
        say((x.body && x.body.error) || 'not saved: the server answered ' + x.status, true);
        if (x.body && x.body.stale) poll();
        return;
      }
      var saved = x.body.photo;
      var was = photos.get(saved.id);
      if (was) recount(was, saved);
      photos.set(saved.id, saved);
      showCounts();
      say(action === 'clear' ? 'decision cleared' : (action === 'accept' ? 'accepted' : 'rejected') + ' · in the ledger');
      var cur = current();
      if (cur && cur.id === saved.id && action !== 'clear') move(1);
      else draw();
    }, function () {
      say('not saved: the review server does not answer (was it stopped?)', true);
    });
  }

  function startReject() {
    var p = current();
    if (!p) return;
    if (p.s !== 'done') { say('only a done photo is reviewed: this one is ' + p.s, true); return; }
    rejecting = p.id;
    var box = $('reason-box');
    var input = $('reason-input');
    input.value = '';
    box.hidden = false;
    input.focus();
  }

  function endReject(withReason) {
    var input = $('reason-input');
    var text = withReason ? input.value : null;
    $('reason-box').hidden = true;
    input.blur();
    var id = rejecting;
    rejecting = null;
    var p = current();
    if (p && p.id === id) decide('reject', text);
  }

  document.addEventListener('keydown', function (e) {
    if (rejecting !== null) {
      if (e.key === 'Enter') { e.preventDefault(); endReject(true); }
      else if (e.key === 'Escape') { e.preventDefault(); endReject(false); }
      return;
    }
    var t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA')) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.shiftKey && e.key.indexOf('Arrow') === 0) { if (zoom) { pan(e.key); e.preventDefault(); } return; }
    switch (e.key) {
      case 'ArrowRight': move(1); break;
      case 'ArrowLeft': move(-1); break;
      case 'p': case 'P': decide('accept', null); break;
      case 'x': case 'X': startReject(); break;
      case 'u': case 'U': decide('clear', null); break;
      case 'f': case 'F':
        if (!flip) { flip = true; flipShows = 'input'; } else flipShows = flipShows === 'input' ? 'output' : 'input';
        layout();
        break;
      case 's': case 'S': flip = false; layout(); break;
      case 'z': case 'Z': zoom = !zoom; layout(); break;
      default: return;
    }
    e.preventDefault();
  });

  $('filter').addEventListener('change', function (e) { filter = e.target.value; e.target.blur(); showCounts(); rebuild(); });
  $('folder').addEventListener('change', function (e) { folder = e.target.value; e.target.blur(); rebuild(); });
  $('input-view').addEventListener('scroll', sync('input-view', 'output-view'));
  $('output-view').addEventListener('scroll', sync('output-view', 'input-view'));
  $('input-img').addEventListener('load', function () { if (zoom) layout(); });
  $('output-img').addEventListener('load', function () { if (zoom) layout(); });

  var polling = false;
  function poll() {
    if (polling || cursor === null) return;
    polling = true;
    get('since=' + encodeURIComponent(cursor) + (countsV === null ? '' : '&v=' + countsV))
      .then(function (b) {
        cursor = b.cursor;
        countsFrom(b);
        if (b.photos.length) merge(b.photos);
        else if (b.counts) { showCounts(); position(); }
      }, function (err) { say('the review server does not answer (' + err.message + ')', true); })
      .then(function () { polling = false; });
  }
  rebuild().then(function () { document.body.dataset.ready = '1'; });
  setInterval(poll, 2000);
})();
`;
