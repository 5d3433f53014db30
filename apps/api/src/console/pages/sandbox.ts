import { listSandbox, sandboxMessage } from '../../../../core/src/sandbox';
import { sandboxQuery } from '../../../../core/src/sandbox/schema';
import { validate } from '../../../../core/src/validate';
import { formQuery, type ConsolePage } from '../page';

/** docs/sandbox.md in the console: what test keys sent, kept instead of delivered, and each message as it was built. */
export const sandboxPage: ConsolePage = {
  path: '/sandbox',
  title: 'Sandbox',
  templates: {
    sandbox: `<p class="muted">Messages of test keys (<code>ms_test_</code>): kept here, never sent (docs/sandbox.md).</p>
<form method="get" action="/admin/sandbox" class="card">
<label>Account <input name="account" type="number" min="1" value="<%= it.account %>"></label>
<label>Show <input name="limit" type="number" min="1" max="1000" value="<%= it.limit %>"></label>
<button>Filter</button>
</form>
<table><thead><tr><th>Kept</th><th>Account</th><th>To</th><th>Subject</th><th>Status</th><th>Recipient plays</th></tr></thead><tbody>
<% it.messages.forEach(function (m) { %><tr><td><%= m.kept_at.toISOString() %></td><td><%= m.account_id %></td><td><%= m.to %></td><td><a href="/admin/sandbox/<%= m.id %>"><%= m.subject || '(no subject)' %></a></td><td><%= m.status %></td><td><%= m.fate %></td></tr><% }) %>
</tbody></table>
<% if (!it.messages.length) { %><p class="muted">The sandbox has kept no message yet.</p><% } %>`,
    sandboxMessage: `<p><a href="/admin/sandbox">All sandbox messages</a> · message <%= it.id %></p>
<h2>As built for the wire</h2><pre class="mail-text"><%= it.raw %></pre>`,
  },
  routes(router, ctx) {
    router.get('/sandbox', async (req, res) => {
      const filter = validate<{ account?: number; limit: number }>(sandboxQuery, formQuery(req));
      const messages = await listSandbox(ctx.db, { limit: filter.limit, account: filter.account });
      ctx.render(req, res, 'sandbox', 'Sandbox', { messages, account: filter.account ? String(filter.account) : '', limit: filter.limit });
    });
    router.get('/sandbox/:id', async (req, res) => {
      const raw = await sandboxMessage(ctx.db, req.params.id);
      ctx.render(req, res, 'sandboxMessage', 'Sandbox message', { id: req.params.id, raw: raw.toString('utf8') });
    });
  },
};
