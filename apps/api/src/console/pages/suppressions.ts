import { listAccounts } from '../../../../core/src/accounts';
import { findSuppressions, removeSuppression, suppressByHand, suppressionsCsv, type SuppressionFilter } from '../../../../core/src/suppressions/manage';
import { suppressionFilter, suppressionInput, suppressionRemoval } from '../../../../core/src/suppressions/schema';
import { idParam, validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { narrow, viewScope, field, numberField, query, type ConsolePage } from '../page';

const REASONS: Record<string, string> = { bounced: 'bounce', complained: 'complaint', manual: 'added by hand', unsubscribed: 'unsubscribe' };

/**
 * Suppressions (docs/operator.md): who gets no mail and why (a bounce, a complaint, added by hand, an unsubscribe
 * from a list) and since when; find by part of an address; take one off with the reason (written to the audit log);
 * add one by hand; export the list as CSV.
 */
export const suppressionsPage: ConsolePage = {
  path: '/suppressions',
  title: 'Suppressions',
  templates: {
    suppressions: `<form method="get" action="/admin/suppressions" class="card search" role="search">
<label>Address <input name="q" value="<%= it.f.q || '' %>" placeholder="part of an address" size="30"></label>
<label>Account <input name="account" value="<%= it.f.account || '' %>" size="6" inputmode="numeric"></label>
<label>Why <select name="reason"><option value="">any reason</option><% Object.keys(it.reasons).forEach(function (r) { %><option value="<%= r %>"<% if (it.f.reason === r) { %> selected<% } %>><%= it.reasons[r] %></option><% }) %></select></label>
<button>Find</button> <a href="/admin/suppressions.csv<%= it.f.account ? '?account=' + it.f.account : '' %>" download>Export CSV</a>
</form>
<p class="muted" id="suppression-count"><%= it.rows.length %> shown<%= it.rows.length >= it.f.limit ? ' (the newest ' + it.f.limit + ': narrow the search)' : '' %>.</p>
<table id="suppressions"><thead><tr><th>Address</th><th>Account</th><th>Why</th><th>Since</th><th>Detail</th><th>Remove</th></tr></thead><tbody>
<% it.rows.forEach(function (s) { %><tr class="suppression" data-reason="<%= s.reason %>"><td><a href="/admin/subscribers?q=<%= encodeURIComponent(s.email) %>"><%= s.email %></a></td><td><%= s.account %></td>
<td><%= it.reasons[s.reason] %><% if (s.list) { %> from <a href="/admin/lists/<%= s.list.id %>"><%= s.list.name %></a><% } %><% if (s.bounce_reason) { %> (<%= s.bounce_reason %>)<% } %></td><td><%= s.at || '-' %></td><td><%= s.detail %></td>
<td><% if (s.id !== null) { %><form method="post" action="/admin/suppressions/<%= s.id %>/delete" class="inline">${CSRF_FIELD}<label>Reason <input name="reason" required minlength="3" maxlength="500" size="16"></label> <button>Remove</button></form><% } else { %><span class="muted">the person's choice</span><% } %></td></tr><% }) %>
</tbody></table>
<% if (!it.rows.length) { %><p class="muted">Nothing matches.</p><% } %>
<form method="post" action="/admin/suppressions" class="card">${CSRF_FIELD}
<h2>Add by hand</h2>
<p class="muted">The address gets no mail from the account (sends, lists, campaigns) until it is removed here.</p>
${ACCOUNT_SELECT}
<label>Address <input type="email" name="email" required maxlength="254" size="36"></label>
<label>Reason <input name="detail" required minlength="3" maxlength="500" size="50" placeholder="asked by phone not to be written to"></label>
<button>Suppress</button>
</form>`,
  },
  routes(router, ctx) {
    router.get('/suppressions', async (req, res) => {
      const f = validate<SuppressionFilter>(suppressionFilter, { q: query(req, 'q'), account: query(req, 'account'), reason: query(req, 'reason') });
      const [rows, accounts] = await Promise.all([findSuppressions(ctx.db, { ...f, account: narrow(viewScope(res), f.account as number | undefined) }), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'suppressions', 'Suppressions', { rows, f, reasons: REASONS, accounts, account: f.account ? String(f.account) : '' });
    });
    router.get('/suppressions.csv', async (req, res) => {
      const { account } = validate<{ account?: number }>(suppressionFilter, { account: query(req, 'account') });
      res.set({ 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="suppressions${account ? `-${account}` : ''}.csv"`, 'Cache-Control': 'no-store' });
      for await (const chunk of suppressionsCsv(ctx.reads.db, narrow(viewScope(res), account))) res.write(chunk);
      res.end();
    });
    router.post('/suppressions', async (req, res) => {
      const input = validate<{ account: number; email: string; detail: string }>(suppressionInput, { account: numberField(req, 'account'), email: field(req, 'email'), detail: field(req, 'detail') });
      const { added } = await suppressByHand(ctx.db, input, auditContext(req, res, 'console'));
      await ctx.redirect(req, res, `/admin/suppressions?q=${encodeURIComponent(input.email)}`, added ? `${input.email} suppressed.` : `${input.email} was already suppressed; nothing changed.`);
    });
    router.post('/suppressions/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const { reason } = validate<{ reason: string }>(suppressionRemoval, { reason: field(req, 'reason') });
      const { email } = await removeSuppression(ctx.db, id, reason, auditContext(req, res, 'console'));
      await ctx.redirect(req, res, `/admin/suppressions?q=${encodeURIComponent(email)}`, `${email} removed from the suppressions: mail may reach it again.`);
    });
  },
};
