import { listInbound } from '../../../../core/src/inbound/list';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { Joi, validate } from '../../../../core/src/validate';
import type { ConsolePage } from '../page';

const inboundFilter = Joi.object({
  mailbox: Joi.number().integer().positive().allow(''),
  unmatched: Joi.string().valid('', 'yes'),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** docs/inbound.md in the console: each mailbox's IMAP reader and the emails it handled, newest first. */
export const inboundPage: ConsolePage = {
  path: '/inbound',
  title: 'Inbound',
  templates: {
    inbound: `<h2>Readers</h2>
<table><thead><tr><th>Mailbox</th><th>IMAP</th><th>State</th><th>Last checked</th><th>Last error</th></tr></thead><tbody>
<% it.readers.forEach(function (m) { %><tr><td><a href="/admin/inbound?mailbox=<%= m.id %>"><%= m.address %></a></td><td><%= m.imap ? m.imap.user + '@' + m.imap.host + ':' + m.imap.port + (m.imap.secure ? ' (TLS)' : '') : 'not set' %></td><td><%= m.inbound.state %></td><td><%= m.inbound.checked_at ? m.inbound.checked_at.toISOString() : '-' %></td><td><%= m.inbound.last_error || '' %></td></tr><% }) %>
</tbody></table>
<form method="get" action="/admin/inbound" class="card">
<label>Mailbox <select name="mailbox"><option value="">all</option><% it.readers.forEach(function (m) { %><option value="<%= m.id %>"<% if (String(m.id) === it.mailbox) { %> selected<% } %>><%= m.address %></option><% }) %></select></label>
<label><input type="checkbox" name="unmatched" value="yes"<% if (it.unmatched) { %> checked<% } %>> Unmatched reports only</label>
<label>Show <input name="limit" type="number" min="1" max="1000" value="<%= it.limit %>"></label>
<button>Filter</button>
</form>
<h2>Handled emails</h2>
<table><thead><tr><th>Received</th><th>Mailbox</th><th>From</th><th>Subject</th><th>Kind</th><th>Prospect</th></tr></thead><tbody>
<% it.messages.forEach(function (m) { %><tr><td><%= m.received_at.toISOString() %></td><td><%= it.addresses[m.mailbox] || m.mailbox %></td><td><%= m.from %></td><td><%= m.subject %></td><td><%= m.kind %><% if (m.reason) { %> (<%= m.reason %>)<% } %><% if (m.unmatched) { %><br><strong>unmatched, not applied:</strong> <%= m.unmatched %><% } %></td><td><%= m.prospect_id === null ? '-' : m.prospect_id %></td></tr><% }) %>
</tbody></table>
<% if (!it.messages.length) { %><p class="muted">No inbound email handled yet.</p><% } %>`,
  },
  routes(router, ctx) {
    router.get('/inbound', async (req, res) => {
      const filter = validate<{ mailbox?: number | ''; unmatched?: string; limit: number }>(inboundFilter, req.query);
      const mailbox = filter.mailbox || undefined;
      const unmatched = filter.unmatched === 'yes';
      const [readers, messages] = await Promise.all([listMailboxes(ctx.db), listInbound(ctx.db, { mailbox, unmatched: unmatched || undefined, limit: filter.limit })]);
      const addresses = Object.fromEntries(readers.map((m) => [m.id, m.address]));
      ctx.render(req, res, 'inbound', 'Inbound', { readers, messages, addresses, mailbox: mailbox ? String(mailbox) : '', unmatched, limit: filter.limit });
    });
  },
};
