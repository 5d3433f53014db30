import { importQuery } from '../../../../core/src/imports/schema';
import { listChanges, listInput, SUBSCRIBER_STATUSES, subscribersQuery } from '../../../../core/src/subscribers/schema';
import { listAccounts } from '../../../../core/src/accounts';
import { writeSubscribersCsv } from '../../../../core/src/subscribers/csv';
import { lagHeader } from '../../../../core/src/replicas';
import { browseLists, browseSubscribers } from '../../../../core/src/subscribers/browse';
import { changeList, createList, formUrl, getList } from '../../../../core/src/subscribers/lists';
import { embedSnippet } from '../../../../core/src/subscribers/html';
import { BadRequest } from '../../../../core/src/errors';
import { getImport, receiveImport, type ImportView } from '../../../../core/src/imports';
import type { VerifyMode } from '../../../../core/src/verify';
import { MultipartReader } from '../multipart';
import { csrfMatches } from '../session';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { idParam, validate } from '../../../../core/src/validate';
import { ACCOUNT_SELECT, CSRF_FIELD, FORM_LIMIT_TEXT, mailboxSelect } from '../views';
import { viewScope, field, formQuery, numberField, type ConsolePage } from '../page';
import { subscriberRoutes, subscriberTemplates } from './subscriber';
import { formRows, rowControls, STEP_TEMPLATE, stepOf } from '../editors';
import { listTemplates } from '../../../../core/src/templates/service';
import type { Db } from '../../../../core/src/db';
import { creation, importChange, listChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';

export const listsPage: ConsolePage = {
  path: '/lists',
  title: 'Lists',
  templates: {
    ...subscriberTemplates,
    import: `<p><a href="/admin/lists/<%= it.import.list %>">Back to the list</a></p>
<p id="import-status">Import <%= it.import.id %>: <strong><%= it.import.status %></strong>, <%= it.import.processed %> of <%= it.import.total %> lines (<%= it.percent %>%)</p>
<progress max="<%= it.import.total %>" value="<%= it.import.processed %>"><%= it.percent %>%</progress>
<table><tbody><tr><th>Added</th><td><%= it.import.added %></td></tr><tr><th>Updated</th><td><%= it.import.updated %></td></tr><tr><th>Skipped (unchanged or not valid)</th><td><%= it.import.skipped %></td></tr><tr><th>Refused (suppressed or stop list)</th><td><%= it.import.refused %></td></tr></tbody></table>
<% if (it.import.verify) { %><p id="import-verification">Verified (<%= it.import.verify %>): <% ['deliverable', 'risky', 'undeliverable', 'unknown'].forEach(function (r, i) { %><%= i ? ' · ' : '' %><%= r %> <strong><%= it.import.verification[r] || 0 %></strong><% }) %></p><% } %>
<% if (it.import.errors.length) { %><h2>Lines not applied as given</h2><table><thead><tr><th>Line</th><th>Why</th></tr></thead><tbody>
<% it.import.errors.forEach(function (e) { %><tr><td><%= e.line %></td><td><%= e.reason %></td></tr><% }) %>
</tbody></table><% } %>
<% if (it.running) { %><p>This page refreshes every 2 seconds until the import is done.</p><% } %>`,
    lists: `<table><thead><tr><th>Id</th><th>Account</th><th>Name</th><th>Key</th><th>Double opt-in</th><th>Active subscribers</th></tr></thead><tbody>
<% it.lists.forEach(function (l) { %><tr><td><%= l.id %></td><td><%= l.account %></td><td><a href="/admin/lists/<%= l.id %>"><%= l.name %></a></td><td><code><%= l.key %></code></td><td><%= l.confirm ? 'yes' : 'no' %></td><td><%= l.subscribers %></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/lists" class="card">${CSRF_FIELD}
<h2>New list</h2>
${ACCOUNT_SELECT}
<label>Name <input name="name" required maxlength="200"></label>
${mailboxSelect('Mailbox (sends the confirmation emails)')}
<label><input type="checkbox" name="confirm" value="yes" checked> Double opt-in</label>
<button>Create list</button>
</form>`,
    list: `<p><a href="/admin/lists">All lists</a> · key <code><%= it.list.key %></code> · <%= it.list.subscribers %> active · <a href="/admin/lists/<%= it.list.id %>/subscribers.csv" download>Export CSV</a></p>
<div class="card"><h2>Sign-up form</h2>
<p>Hosted at <a id="form-url" href="<%= it.formUrl %>"><%= it.formUrl %></a>. To put it on your own page, paste this HTML:</p>
<textarea id="embed-snippet" readonly rows="7" aria-label="The sign-up form's HTML"><%= it.snippet %></textarea></div>
<form method="post" action="/admin/lists/<%= it.list.id %>/series" class="card" id="series">${CSRF_FIELD}
<h2>Welcome series</h2>
<% if (it.list.steps.length) { %><table><thead><tr><th>Step</th><th>Subject</th><th>After (hours)</th><th>Waiting</th><th>Sent</th><th>Ended before it</th></tr></thead><tbody>
<% it.list.steps.forEach(function (s) { %><tr><td><%= s.step %></td><td><% var picked = it.templates.find(function (t) { return t.id === s.template; }); %><%= s.subject || (s.template !== null ? 'template ' + (picked ? picked.name : s.template) : '') %></td><td><%= s.delay_hours %></td><td><%= s.waiting %></td><td><%= s.sent %></td><td><%= s.ended %></td></tr><% }) %>
</tbody></table><% } else { %><p class="muted">No series: new subscribers get no emails of their own.</p><% } %>
<p class="muted">Step 1's wait counts from the moment a person becomes active, each next one from the step before. A step is a stored template of the account or its own subject with HTML or text (placeholders as in broadcasts). Reorder with the positions; a removed or blank step is left out; no steps removes the series.</p>
<% it.seriesRows.forEach(function (s, i) { var n = i + 1; %><fieldset class="row step"><legend><%= s.blank ? 'New step' : 'Step ' + n %></legend>
<label>After (hours) <input type="number" name="step<%= i %>.delay_hours" min="0" step="any" value="<%= s.delay_hours %>"></label>
${STEP_TEMPLATE}
<label>Subject <input name="step<%= i %>.subject" maxlength="998" value="<%= s.subject %>"></label>
<label>HTML <textarea name="step<%= i %>.html" rows="3"><%= s.html %></textarea></label>
<label>Text <textarea name="step<%= i %>.text" rows="2"><%= s.text %></textarea></label>
${rowControls('step', 'Step')}
</fieldset><% }) %>
<button>Save the series</button>
</form>
<form method="get" action="/admin/lists/<%= it.list.id %>" class="card">
<label>Search <input name="q" value="<%= it.q %>" placeholder="address or name"></label>
<label>Status <select name="status"><option value="">any</option><% it.statuses.forEach(function (s) { %><option<% if (s === it.status) { %> selected<% } %>><%= s %></option><% }) %></select></label>
<button>Filter</button>
</form>
<table><thead><tr><th>Id</th><th>Email</th><th>Name</th><th>Status</th><th>Added</th><th>Confirmed</th><th>Verified</th></tr></thead><tbody>
<% it.page.rows.forEach(function (s) { %><tr><td><a href="/admin/subscribers/<%= s.id %>"><%= s.id %></a></td><td><%= s.email %></td><td><%= s.name %></td><td><%= s.status %></td><td><%= s.created_at %></td><td><%= s.confirmed_at || '-' %></td><td><% if (s.verification) { %><span class="verification <%= s.verification.result %>"><%= s.verification.result %></span> <span class="muted">(<%= s.verification.checked_at %>)</span><% } else { %>-<% } %></td></tr><% }) %>
</tbody></table>
<% if (it.page.next) { %><p><a rel="next" href="/admin/lists/<%= it.list.id %>?q=<%= encodeURIComponent(it.q) %>&amp;status=<%= encodeURIComponent(it.status) %>&amp;after=<%= it.page.next %>">Next page</a></p><% } %>
<form method="post" action="/admin/lists/<%= it.list.id %>/upload" enctype="multipart/form-data" class="card" id="upload">${CSRF_FIELD}
<h2>Import a file</h2>
<label><input type="checkbox" name="confirmed" value="yes"> They already opted in (lines without a status come in active)</label>
<label>Verify addresses (docs/verification.md) <select name="verify"><option value="">no</option><option value="flag">flag: add all, keep the result</option><option value="block_undeliverable">block undeliverable addresses</option></select></label>
<label>CSV with a header line (<code>email,name,tags,status,consent_source,consent_at</code>), or NDJSON (<code>.ndjson</code>, <code>.jsonl</code>); up to 100 MB <input type="file" name="file" required accept=".csv,.ndjson,.jsonl,text/csv"></label>
<button>Upload</button>
</form>
<form method="post" action="/admin/lists/<%= it.list.id %>/import" class="card">${CSRF_FIELD}
<h2>Import pasted lines</h2>
<label>People, one a line, as CSV: a header line naming the columns (<code>email,name,tags,status,consent_source,consent_at</code>; tags separated by <code>;</code>), or plain <code>email,name</code> lines. <strong>Up to ${FORM_LIMIT_TEXT} pasted here</strong> (about 5,000 lines of <code>email,name</code>); for anything larger, <a href="#upload">import it as a file</a> (up to 100 MB), or use <code>npm run admin -- import FILE --list <%= it.list.id %></code> or the admin API. <textarea name="csv" required rows="6"></textarea></label>
<label><input type="checkbox" name="confirmed" value="yes"> They already opted in (lines without a status come in active; otherwise a list with double opt-in emails each new person a confirmation)</label>
<label>Verify addresses (docs/verification.md) <select name="verify"><option value="">no</option><option value="flag">flag: add all, keep the result</option><option value="block_undeliverable">block undeliverable addresses</option></select></label>
<button>Import</button>
</form>`,
  },
  routes(router, ctx) {
    subscriberRoutes(router, ctx);
    router.get('/lists', async (req, res) => {
      const [lists, accounts, mailboxes] = await Promise.all([browseLists(ctx.db, viewScope(res)), listAccounts(ctx.db, viewScope(res)), listMailboxes(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'lists', 'Lists', { lists, accounts, mailboxes });
    });
    router.post('/lists', async (req, res) => {
      const input = validate(listInput, {
        account: numberField(req, 'account'),
        name: field(req, 'name'),
        mailbox: numberField(req, 'mailbox'),
        confirm: field(req, 'confirm') === 'yes',
      });
      const list = await audit(req, res, 'console')(ctx.db, creation('list', input.account), (db: Db) => createList(db, input));
      await ctx.redirect(req, res, `/admin/lists/${list.id}`, `List ${list.id} "${list.name}" created.`);
    });
    // every subscriber as CSV, streamed a keyset page at a time (subscribers/csv.ts, shared with the admin API), from the replica when there is one
    router.get('/lists/:id/subscribers.csv', async (req, res) => {
      const list = await getList(ctx.reads.db, validate(idParam, req.params.id));
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="list-${list.id}.csv"`, 'Cache-Control': 'no-store', ...(await lagHeader(ctx.reads)) });
      await writeSubscribersCsv(ctx.reads.db, list.id, res);
      res.end();
    });
    // the pasted lines become an import (apps/core/src/imports), applied by a worker; its page follows the progress
    router.post('/lists/:id/import', async (req, res) => {
      const id = validate(idParam, req.params.id);
      let csv = field(req, 'csv').replace(/^\uFEFF/, '');
      if (!/^\s*"?email"?\s*(,|\r?\n|$)/i.test(csv)) csv = `email,name\n${csv}`;
      const verify = validate<{ verify?: VerifyMode }>(importQuery, { verify: field(req, 'verify') || undefined }).verify;
      const options = { defaultStatus: field(req, 'confirmed') === 'yes' ? ('active' as const) : undefined, verify };
      const commit = (work: (db: Db) => Promise<ImportView>) => audit(req, res, 'console')(ctx.db, importChange(id, 'csv'), work);
      const imported = await receiveImport(ctx.db, id, 'csv', [csv], { ...options, commit });
      await ctx.redirect(req, res, `/admin/imports/${imported.id}`, `Import ${imported.id}: ${imported.total} lines stored.`);
    });
    // a file from the operator's computer: multipart, its CSRF token read first, the file streamed into the import
    router.post('/lists/:id/upload', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const reader = new MultipartReader(req, req.get('content-type'));
      const first = await reader.next();
      const token = first?.name === '_csrf' ? await reader.text(256) : '';
      if (!csrfMatches(res.locals.session!, token)) {
        res.set('Connection', 'close');
        return ctx.render(req, res, 'error', 'Refused', { error: 'The form is stale or did not come from this console (CSRF token missing or wrong). Reload the page and try again.', back: `/admin/lists/${id}` }, 403);
      }
      let confirmed = false;
      let verify: VerifyMode | undefined;
      let imported;
      for (let part = await reader.next(); part; part = await reader.next()) {
        if (part.name === 'confirmed') confirmed = (await reader.text(16)) === 'yes';
        else if (part.name === 'verify') verify = validate<{ verify?: VerifyMode }>(importQuery, { verify: (await reader.text(32)) || undefined }).verify;
        else if (part.name === 'file' && !imported && part.filename) {
          const format = /\.(ndjson|jsonl)$/i.test(part.filename) ? 'ndjson' : 'csv';
          const options = { defaultStatus: confirmed ? ('active' as const) : undefined, verify };
          const commit = (work: (db: Db) => Promise<ImportView>) => audit(req, res, 'console')(ctx.db, importChange(id, format), work);
          imported = await receiveImport(ctx.db, id, format, reader.body(), { ...options, commit });
        }
      }
      if (!imported) throw new BadRequest('choose a file to import');
      await ctx.redirect(req, res, `/admin/imports/${imported.id}`, `Import ${imported.id}: ${imported.total} lines stored.`);
    });
    router.get('/imports/:id', async (req, res) => {
      const view = await getImport(ctx.db, validate(idParam, req.params.id));
      const running = view.status === 'queued' || view.status === 'running';
      const percent = view.total ? Math.floor((100 * view.processed) / view.total) : 0;
      // the console runs no script: the browser reloads the page itself while the import runs
      if (running) res.set('Refresh', '2');
      ctx.render(req, res, 'import', `Import ${view.id}`, { import: view, running, percent });
    });
    // the welcome series (lifecycle/series.ts): the editor's rows as the admin API's `steps`
    router.post('/lists/:id/series', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const steps = formRows(req, 'step').map((row) => stepOf(row, ['subject', 'html', 'text']));
      const changes = validate(listChanges, { steps });
      const list = await audit(req, res, 'console')(ctx.db, listChange(id), (db: Db) => changeList(db, id, changes));
      await ctx.redirect(req, res, `/admin/lists/${id}#series`, `List ${id}: the series has ${list.steps.length} step${list.steps.length === 1 ? '' : 's'}.`);
    });
    router.get('/lists/:id', async (req, res) => {
      const list = await getList(ctx.db, validate(idParam, req.params.id));
      const templates = await listTemplates(ctx.db, list.account, 'template');
      // the admin API's rules (subscribers/schema.ts); a page of the console's own size
      const filter = validate<{ q?: string; status?: (typeof SUBSCRIBER_STATUSES)[number]; after?: number }>(subscribersQuery, formQuery(req));
      const { status } = filter;
      const page = await browseSubscribers(ctx.db, list.id, { search: filter.q, status, after: filter.after });
      const url = formUrl(list.key);
      const seriesRows = [
        ...list.steps.map((s) => ({ blank: false, delay_hours: s.delay_hours, template: s.template, subject: s.subject, html: s.html ?? '', text: s.text ?? '' })),
        { blank: true, delay_hours: '', template: null, subject: '', html: '', text: '' },
      ];
      ctx.render(req, res, 'list', `List ${list.name}`, { list, page, q: filter.q ?? '', status: status ?? '', statuses: SUBSCRIBER_STATUSES, formUrl: url, snippet: embedSnippet(url, list.topics.filter((t) => t.public)), seriesRows, templates });
    });
  },
};
