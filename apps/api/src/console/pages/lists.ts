import * as schemas from '../../../../core/src/admin-schemas';
import { listAccounts } from '../../../../core/src/services/accounts';
import { writeSubscribersCsv } from '../../../../core/src/control/csv';
import { browseLists, browseSubscribers, findList } from '../../../../core/src/services/browse';
import { createList } from '../../../../core/src/services/lists';
import { importSubscribers } from '../../../../core/src/subscribers/import';
import { listMailboxes } from '../../../../core/src/services/mailboxes';
import { Joi, validate } from '../../../../core/src/validate';
import { ACCOUNT_SELECT, CSRF_FIELD, mailboxSelect } from '../views';
import { field, numberField, type ConsolePage } from '../page';

const SUBSCRIBER_STATUSES = ['pending', 'active', 'unsubscribed', 'bounced', 'complained'] as const;
const subscribersQuery = Joi.object({
  q: Joi.string().trim().max(254).allow(''),
  status: Joi.string().valid(...SUBSCRIBER_STATUSES, ''),
  after: Joi.number().integer().positive(),
});

export const listsPage: ConsolePage = {
  path: '/lists',
  title: 'Lists',
  templates: {
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
<form method="get" action="/admin/lists/<%= it.list.id %>" class="card">
<label>Search <input name="q" value="<%= it.q %>" placeholder="address or name"></label>
<label>Status <select name="status"><option value="">any</option><% it.statuses.forEach(function (s) { %><option<% if (s === it.status) { %> selected<% } %>><%= s %></option><% }) %></select></label>
<button>Filter</button>
</form>
<table><thead><tr><th>Id</th><th>Email</th><th>Name</th><th>Status</th><th>Added</th><th>Confirmed</th></tr></thead><tbody>
<% it.page.rows.forEach(function (s) { %><tr><td><%= s.id %></td><td><%= s.email %></td><td><%= s.name %></td><td><%= s.status %></td><td><%= s.created_at %></td><td><%= s.confirmed_at || '-' %></td></tr><% }) %>
</tbody></table>
<% if (it.page.next) { %><p><a rel="next" href="/admin/lists/<%= it.list.id %>?q=<%= encodeURIComponent(it.q) %>&amp;status=<%= encodeURIComponent(it.status) %>&amp;after=<%= it.page.next %>">Next page</a></p><% } %>
<form method="post" action="/admin/lists/<%= it.list.id %>/import" class="card">${CSRF_FIELD}
<h2>Import</h2>
<label>People, one a line: <code>email,name</code> (CSV; a header line is skipped; at most 5,000 lines) <textarea name="csv" required rows="6"></textarea></label>
<label><input type="checkbox" name="confirmed" value="yes"> They already opted in (import as active; otherwise a list with double opt-in emails each new person a confirmation)</label>
<button>Import</button>
</form>`,
  },
  routes(router, ctx) {
    router.get('/lists', async (req, res) => {
      const [lists, accounts, mailboxes] = await Promise.all([browseLists(ctx.db), listAccounts(ctx.db), listMailboxes(ctx.db)]);
      ctx.render(req, res, 'lists', 'Lists', { lists, accounts, mailboxes });
    });
    router.post('/lists', async (req, res) => {
      const input = validate(schemas.listInput, {
        account: numberField(req, 'account'),
        name: field(req, 'name'),
        mailbox: numberField(req, 'mailbox'),
        confirm: field(req, 'confirm') === 'yes',
      });
      const list = await createList(ctx.db, input);
      await ctx.redirect(req, res, `/admin/lists/${list.id}`, `List ${list.id} "${list.name}" created.`);
    });
    // every subscriber as CSV, streamed a keyset page at a time (control/csv.ts, shared with the admin API)
    router.get('/lists/:id/subscribers.csv', async (req, res) => {
      const list = await findList(ctx.db, validate(schemas.idParam, req.params.id));
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="list-${list.id}.csv"`, 'Cache-Control': 'no-store' });
      await writeSubscribersCsv(ctx.db, list.id, res);
      res.end();
    });
    router.post('/lists/:id/import', async (req, res) => {
      const id = validate(schemas.idParam, req.params.id);
      const result = await importSubscribers(ctx.db, id, field(req, 'csv'), { confirmed: field(req, 'confirmed') === 'yes' });
      const { active, pending, exists, gone, suppressed } = result.added;
      const invalid = result.invalid ? `; ${result.invalid} not an address (line ${result.invalidLines.join(', ')}${result.invalid > result.invalidLines.length ? '...' : ''})` : '';
      await ctx.redirect(req, res, `/admin/lists/${id}`, `Imported: ${active} active, ${pending} pending confirmation, ${exists} already on the list, ${gone} unsubscribed before (left alone), ${suppressed} suppressed${invalid}.`);
    });
    router.get('/lists/:id', async (req, res) => {
      const list = await findList(ctx.db, validate(schemas.idParam, req.params.id));
      const filter = validate<{ q?: string; status?: string; after?: number }>(subscribersQuery, req.query);
      const status = filter.status || undefined;
      const page = await browseSubscribers(ctx.db, list.id, { search: filter.q || undefined, status: status as (typeof SUBSCRIBER_STATUSES)[number] | undefined, after: filter.after });
      ctx.render(req, res, 'list', `List ${list.name}`, { list, page, q: filter.q ?? '', status: status ?? '', statuses: SUBSCRIBER_STATUSES });
    });
  },
};
