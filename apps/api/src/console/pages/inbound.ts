import { listInbound } from '../../../../core/src/inbound/list';
import { getReceived, sanitizedHtml } from '../../../../core/src/inbound/received';
import { NotFound } from '../../../../core/src/errors';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { inboundId, inboundQuery } from '../../../../core/src/inbound/schema';
import { validate } from '../../../../core/src/validate';
import { formQuery, viewScope, type ConsolePage } from '../page';

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
<label><input type="checkbox" name="unmatched" value="true"<% if (it.unmatched) { %> checked<% } %>> Unmatched reports only</label>
<label>Show <input name="limit" type="number" min="1" max="1000" value="<%= it.limit %>"></label>
<button>Filter</button>
</form>
<h2>Handled emails</h2>
<table><thead><tr><th>Received</th><th>Mailbox</th><th>From</th><th>Subject</th><th>Kind</th><th>Prospect</th></tr></thead><tbody>
<% it.messages.forEach(function (m) { %><tr><td><%= m.received_at.toISOString() %></td><td><%= it.addresses[m.mailbox] || m.mailbox %></td><td><%= m.from %></td><td><% if (m.kind !== 'bounce' && m.kind !== 'complaint') { %><a href="/admin/inbound/<%= m.id %>"><%= m.subject || '(no subject)' %></a><% } else { %><%= m.subject %><% } %></td><td><%= m.kind %><% if (m.reason) { %> (<%= m.reason %>)<% } %><% if (m.unmatched) { %><br><strong>unmatched, not applied:</strong> <%= m.unmatched %><% } %></td><td><%= m.prospect_id === null ? '-' : m.prospect_id %></td></tr><% }) %>
</tbody></table>
<% if (!it.messages.length) { %><p class="muted">No inbound email handled yet.</p><% } %>`,
    received: `<p><a href="/admin/inbound">All inbound email</a> · <%= it.m.kind %> · received <%= it.m.received_at.toISOString() %></p>
<table><tbody>
<tr><th>From</th><td><%= it.m.from %></td></tr><tr><th>To</th><td><%= it.m.to %></td></tr><tr><th>Subject</th><td><%= it.m.subject %></td></tr>
<tr><th>Answers</th><td><% if (it.m.in_reply_to.message) { %>message <%= it.m.in_reply_to.message %> <% } %><% if (it.m.in_reply_to.prospect) { %>· prospect <%= it.m.in_reply_to.prospect %> <% } %><% if (it.m.in_reply_to.campaign) { %>· <a href="/admin/campaigns/<%= it.m.in_reply_to.campaign %>">campaign <%= it.m.in_reply_to.campaign %></a><% } %></td></tr>
</tbody></table>
<% if (it.m.invalid) { %><p><strong>Not valid MIME:</strong> the raw email is kept; its bytes as text below.</p><% } %>
<% if (it.html) { %><h2>HTML</h2><iframe class="mail-body" sandbox="" referrerpolicy="no-referrer" title="the email's html" srcdoc="<%= it.html %>"></iframe><% } %>
<h2>Text</h2><pre class="mail-text"><%= it.m.text || '' %></pre>
<h2>Attachments</h2>
<% if (!it.m.attachments.length) { %><p class="muted">None.</p><% } %>
<ul><% it.m.attachments.forEach(function (a) { %><li><% if (a.url) { %><a href="<%= a.url %>"><%= a.filename || 'attachment' %></a><% } else { %><%= a.filename || 'attachment' %> (over the size cap: kept as its name, type and size only)<% } %> · <%= a.content_type %> · <%= a.size %> bytes</li><% }) %></ul>`,
  },
  routes(router, ctx) {
    router.get('/inbound', async (req, res) => {
      // the admin API's rules (inbound/schema.ts); the account is the viewer's scope, never the query's
      const filter = validate<{ mailbox?: number; unmatched?: boolean; limit: number }>(inboundQuery, formQuery(req));
      const { mailbox } = filter;
      const unmatched = filter.unmatched === true;
      const [readers, messages] = await Promise.all([listMailboxes(ctx.db, viewScope(res)), listInbound(ctx.db, { mailbox, unmatched: unmatched || undefined, limit: filter.limit, account: viewScope(res) })]);
      const addresses = Object.fromEntries(readers.map((m) => [m.id, m.address]));
      ctx.render(req, res, 'inbound', 'Inbound', { readers, messages, addresses, mailbox: mailbox ? String(mailbox) : '', unmatched, limit: filter.limit });
    });
    router.get('/inbound/:id', async (req, res) => {
      const id = validate<number>(inboundId, req.params.id);
      const m = await getReceived(ctx.db, id);
      if (!m) throw new NotFound(`no received email with id ${id}`);
      ctx.render(req, res, 'received', `Inbound: ${m.subject || '(no subject)'}`, { m, html: m.html ? sanitizedHtml(m.html) : null });
    });
  },
};
