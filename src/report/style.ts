/** The report's own style, inline in its one HTML file (the photo table's is in photosTable.ts). */
export const REPORT_CSS = `
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
