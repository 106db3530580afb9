/**
 * The console's one stylesheet, served by the daemon at `/console/console.css` (no CDN, no web
 * font: the page works without internet access). Plain CSS; the page reads fine without it.
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
`;
