import { Eta } from 'eta';
import { shown } from './dates';

/**
 * The console's templates, kept in code (they ship with `tsc` builds as they are) and rendered by eta, which escapes
 * every `<%= %>` output. `<%~ %>` (raw) is used only for `it.body`, the page the layout wraps, and `it.charts`, the
 * SVG charts section built from numbers and escaped text by charts.ts.
 * No template carries an inline script or style: the CSP allows neither; the few scripts are files of the console's own
 * origin, allowed only on the pages that load them (copy-script.ts, pages/compose.ts, passkey-script.ts).
 * On a phone (at most 760 px) a table with a head reads as cards, a row each, its cells labelled by their column's
 * heading (cards.ts); a table without one (a heading per row) scrolls in its own box if it must, so every table of a
 * page is a tab stop the keyboard reaches, and its cells keep a readable width (a word, not a few letters).
 */
const LAYOUT = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title><%= it.title %> · mailservice console</title>
<link rel="stylesheet" href="/admin/static/console.css">
</head>
<body>
<% if (it.nav) { %>
<header>
<strong>mailservice</strong>
<nav>
<% it.nav.forEach(function (item) { %><a href="<%= item.href %>"<% if (item.current) { %> aria-current="page"<% } %>><%= item.title %></a> <% }) %>
<% if (it.queues) { %><a href="/admin/queues">Queues</a> <% } %><a href="/docs">API docs</a>
</nav>
<% if (it.who) { %><span class="who"><%= it.who %></span> <form method="post" action="/admin/signout-everywhere" class="inline"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><button>Sign out everywhere</button></form><% } %>
<form method="post" action="/admin/signout" class="inline"><input type="hidden" name="_csrf" value="<%= it.csrf %>"><button>Sign out</button></form>
</header>
<% } %>
<main>
<h1><%= it.title %></h1>
<% if (it.flash) { %><p class="flash" role="status"><%= it.flash %></p><% } %>
<% if (it.error) { %><p class="error" role="alert"><%= it.error %></p><% } %>
<%~ it.body.replace(/<table\\b(?![^>]*tabindex)/g, '<table tabindex="0"') %>
</main>
<% if (it.copies) { %><script src="/admin/static/copy.js" defer></script><% } %>
</body>
</html>
`;

/** Helpers for page templates: a CSRF field for every form. */
const CSRF = `<input type="hidden" name="_csrf" value="<%= it.csrf %>">`;

export const CSS = `
*,*::before,*::after{box-sizing:border-box}
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d232b;background:#f7f8fa;overflow-wrap:break-word}
header{display:flex;gap:1.2em;align-items:center;padding:.6em 1.2em;background:#1d3557;color:#fff;flex-wrap:wrap}
header a{color:#dfe8f5;margin-right:.7em}header nav{display:flex;flex-wrap:wrap;gap:.2em .1em}header button{font-size:.85em}header a[aria-current]{color:#fff;font-weight:600}
main{padding:1em 1.6em;max-width:1280px}
table{border-collapse:collapse;width:100%;background:#fff;margin:.6em 0 1.2em}
th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e3e6ea;vertical-align:top;overflow-wrap:anywhere}
th{background:#eef1f5;font-weight:600;overflow-wrap:normal}
form.card,section.card{background:#fff;border:1px solid #e3e6ea;padding:.8em 1em;margin:.8em 0}
form.card label{display:block;margin:.4em 0}
input,select,textarea{font:inherit;padding:.25em .4em;max-width:100%}
textarea{width:100%;min-height:5em}
form.inline{display:inline}
.flash{background:#e6f4ea;border:1px solid #9ccfa8;padding:.5em .8em}
.error{background:#fdecea;border:1px solid #f1a9a0;padding:.5em .8em}
.token{font-family:monospace;font-size:1.1em;background:#fff8db;padding:.4em .6em;border:1px dashed #caa400;word-break:break-all}
.muted{color:#5b646d}
.depth-0{padding-left:0.5em}.depth-1{padding-left:2.0em}.depth-2{padding-left:3.5em}.depth-3{padding-left:5.0em}.depth-4{padding-left:6.5em}.depth-5{padding-left:8.0em}.depth-6{padding-left:9.5em}.depth-7{padding-left:11.0em}.depth-8{padding-left:12.5em}.depth-9{padding-left:14.0em}
.banner{margin:.6em 0}a.button{display:inline-block;padding:.35em .9em;background:#1d3557;color:#fff;text-decoration:none;border-radius:3px}
.chart-figure{margin:.6em 0 1.4em;background:#fff;border:1px solid #e3e6ea;padding:.6em}
.chart-figure svg{width:100%;max-width:100%;height:auto;display:block}
dl.rates{display:flex;flex-wrap:wrap;gap:.6em;margin:.6em 0}dl.rates .rate{background:#fff;border:1px solid #e3e6ea;padding:.4em .9em;min-width:8em}dl.rates dt{color:#4a525a;font-size:.85em}dl.rates dd{margin:0;font-size:1.5em;font-weight:600}
.chart-figure figcaption{color:#4a525a;font-size:.9em;margin-top:.3em}
.chart-figure details{margin-top:.4em}
.copy{user-select:all;cursor:copy;word-break:break-all;background:#fff8db}button.copy-button{font-size:.8em;margin:.2em 0 0 .3em;vertical-align:top}
.status-verified,.status-found{color:#1e7a34;font-weight:600}.status-failed,.status-wrong{color:#b3261e;font-weight:600}.status-missing,.status-pending{color:#8a5a00}
pre.headers{background:#fff;border:1px solid #e3e6ea;padding:.6em .8em;white-space:pre-wrap;word-break:break-all;font-size:.85em}
form.card.search label,form.card.range label{display:inline-block;margin-right:1em}
table.facts th{width:11em}
p.actions form{margin-right:.6em}
a{color:#1a4f8f}code,pre{overflow-wrap:anywhere}pre{white-space:pre-wrap;max-width:100%}
td code.value{display:block;max-height:8em;overflow:auto;font-size:.85em}
.scroll{overflow-x:auto;max-width:100%}
fieldset.row,fieldset.group{border:1px solid #d5dae0;margin:.6em 0;padding:.4em .8em;min-width:0}fieldset.row legend,fieldset.group legend{font-weight:600}
fieldset.row label,div.pair label{display:inline-block;margin:.3em 1em .3em 0}fieldset.row label:has(textarea){display:block;margin-right:0}
input.position{width:4.5em}
details.kind{margin:.4em 0}details.kind summary{cursor:pointer;font-weight:600;color:#1a4f8f}
time,.when{white-space:nowrap}
@media (max-width:760px){
main{padding:.6em .7em}
header{padding:.5em .7em;gap:.5em}
table{display:block;overflow-x:auto;max-width:100%}
th,td{overflow-wrap:break-word;min-width:6.5em}td code.value{display:block;min-width:18em}
table.facts{display:table}table.facts th{width:auto}
table[data-cards],table[data-cards] tbody,table[data-cards] tr,table[data-cards] td{display:block;min-width:0}
table[data-cards]{background:none;overflow:visible}
table[data-cards] thead{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
table[data-cards] tr{background:#fff;border:1px solid #d5dae0;border-radius:3px;margin:0 0 .6em;padding:.15em 0}
table[data-cards] td{border-bottom:1px solid #eef1f5}table[data-cards] td:last-child{border-bottom:0}
table[data-cards] td[data-label]:not([data-label=""])::before{content:attr(data-label) ": ";font-weight:600;color:#3d454d}
form.card label,form.card.search label,form.card.range label{display:block;margin-right:0}
input:not([type=checkbox]):not([type=radio]):not([type=hidden]),select{width:100%}
.chart-figure{padding:.3em}
}
`;

export const TEMPLATES: Record<string, string> = {
  signin: `<% if (it.sso) { %><section class="card"><h2>With your organisation's account</h2>
<p><a class="button" id="signin-sso" href="/admin/sso/start">Sign in with <%= it.sso %></a></p></section><% } %>
<form method="post" action="/admin/signin" class="card">${CSRF}
<h2>With the admin token</h2>
<label>Admin token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
<button>Sign in</button>
</form>
<form method="post" action="/admin/signin" class="card">${CSRF}
<h2>With your email</h2>
<label>Email <input type="email" name="email" autocomplete="username" value="<%= it.email || '' %>" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button id="signin-person">Sign in</button>
<p><a href="/admin/reset">Forgot your password?</a></p>
</form>`,
  error: `<p><a href="<%= it.back %>">Back</a></p>`,
};

export const CSRF_FIELD = CSRF;

/** The most a signed-in console form may carry (the pasted import's limit): body-parser's limit and the words that state it. */
export const FORM_LIMIT = '256kb';
export const FORM_LIMIT_TEXT = '256 KB';

/** The account and mailbox pickers of the create forms (`it.accounts`, `it.mailboxes`). */
export const ACCOUNT_SELECT = `<label>Account <select name="account" required><% it.accounts.forEach(function (a) { %><option value="<%= a.id %>"<% if (String(a.id) === it.account) { %> selected<% } %>><%= a.id %> · <%= a.name %></option><% }) %></select></label>`;
export const mailboxSelect = (label: string) =>
  `<label>${label} <select name="mailbox" required><% it.mailboxes.forEach(function (m) { %><option value="<%= m.id %>"><%= m.address %> (account <%= m.account %>)</option><% }) %></select></label>`;

export function createViews(pages: Record<string, string>): Eta {
  const eta = new Eta({ autoEscape: true, autoFilter: true, filterFunction: shown, cache: true, useWith: false, varName: 'it' });
  eta.loadTemplate('@layout', LAYOUT);
  for (const [name, text] of Object.entries({ ...TEMPLATES, ...pages })) eta.loadTemplate(`@${name}`, text);
  return eta;
}
