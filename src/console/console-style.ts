/**
 * The console's one stylesheet, served by the daemon at `/console/console.css` (no CDN, no web
 * font: the page works without internet access). Plain CSS; the page reads fine without it. Below
 * 720 px (a phone) the secondary columns (`.wide`) are hidden and each table scrolls in its own box
 * (`.scroll`), its first column kept in view: the page is never wider than the screen.
 */
export const CONSOLE_CSS = `
:root { color-scheme: light; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --idle: #57606a; --line: #d0d7de; --head: #f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif; color: #1f2328; background: #fff; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 1.5rem; padding: 0.75rem 1.5rem; border-bottom: 1px solid var(--line); background: var(--head); }
header h1 { font-size: 1.25rem; margin: 0; }
header .sign-out { margin-left: auto; }
main { padding: 0 1.5rem 2rem; }
main.sign-in { max-width: 28rem; margin: 3rem auto; padding: 1.5rem; border: 1px solid var(--line); border-radius: 6px; }
main.sign-in label { display: block; margin: 0.75rem 0; }
main.sign-in input { display: block; width: 100%; margin-top: 0.25rem; padding: 0.4rem; font: inherit; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.25rem; padding-top: 0.5rem; border-top: 2px solid var(--line); }
table { border-collapse: collapse; margin: 0.75rem 0; width: 100%; font-size: 13px; }
caption { text-align: left; font-weight: 600; font-size: 14px; padding: 0.25rem 0; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
thead th { background: var(--head); font-weight: 600; }
tbody th { font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num.bad { color: var(--bad); font-weight: 600; }
td.error-text { color: var(--bad); max-width: 28rem; overflow-wrap: anywhere; }
td.url { overflow-wrap: anywhere; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.state { font-weight: 600; }
.state.ok { color: var(--ok); }
.state.warn { color: var(--warn); }
.state.bad { color: var(--bad); }
.state.idle { color: var(--idle); }
.meta, .hint { color: var(--idle); margin: 0.25rem 0; }
.notice { margin: 0.75rem 1.5rem; padding: 0.5rem 0.75rem; border-radius: 6px; border: 1px solid; }
main .notice { margin: 0.75rem 0; }
.notice.ok { color: var(--ok); border-color: var(--ok); background: #dafbe1; }
.notice.error { color: var(--bad); border-color: var(--bad); background: #ffebe9; }
ul.notes { margin: 0.25rem 0 0.75rem; color: var(--warn); }
td.actions form { margin: 0 0 0.4rem; }
td.actions input[type=number] { width: 6rem; }
button { font: inherit; padding: 0.25rem 0.75rem; cursor: pointer; }
.verdict { margin: 0.75rem 0 0; padding: 0.5rem 0.75rem; border-radius: 6px; border: 1px solid var(--line); border-left-width: 6px; font-size: 15px; }
.verdict.ok { border-left-color: var(--ok); }
.verdict.warn { border-left-color: var(--warn); }
.verdict.bad { border-left-color: var(--bad); background: #fff8f7; }
.verdict p { margin: 0.15rem 0; }
.verdict a.state { text-decoration: underline; }
.scroll { max-width: 100%; overflow-x: auto; }
.scroll table { margin: 0.75rem 0; }
tr:target { outline: 2px solid var(--warn); }
tr.partition th { font-weight: normal; padding-left: 1.25rem; }
details summary { cursor: pointer; }
details .detail { margin: 0.25rem 0 0; color: #1f2328; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
td.lag { white-space: nowrap; }
svg.plot { display: inline-block; vertical-align: middle; margin-left: 0.25rem; }
svg.plot polyline { fill: none; stroke: var(--idle); stroke-width: 1.5; }
svg.plot circle { fill: var(--idle); }
svg.bars rect { fill: var(--idle); }
svg.bars rect.over { fill: var(--bad); }
svg.bars line.limit { stroke: var(--bad); stroke-width: 1; stroke-dasharray: 3 2; }
figure.requests { margin: 0.5rem 0; }
figure.requests figcaption { color: var(--idle); font-size: 12px; }
@media (max-width: 720px) {
  header { padding: 0.5rem 0.75rem; }
  main { padding: 0 0.75rem 1.5rem; }
  .wide { display: none !important; }
  table.cards, table.cards tbody, table.cards tr, table.cards th, table.cards td { display: block; }
  table.cards caption { display: block; }
  table.cards thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  table.cards tr { border: 1px solid var(--line); border-radius: 6px; margin: 0.5rem 0; padding: 0.35rem 0.6rem; }
  table.cards tr.partition { margin-left: 1rem; }
  table.cards th, table.cards td { border: none; padding: 0.1rem 0; text-align: left; }
  table.cards th[scope=row] { font-size: 14px; }
  table.cards td[data-label]::before { content: attr(data-label) ": "; color: var(--idle); }
  table.cards td.num { text-align: left; }
  table.cards td:empty { display: none; }
  td.error-text { max-width: none; }
  td.lag { white-space: normal; }
  figure.requests svg { max-width: 100%; height: auto; }
}
`;
