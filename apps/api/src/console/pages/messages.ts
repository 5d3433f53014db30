import { browseMessages } from '../../../../core/src/sending/messages';
import { Joi, validate } from '../../../../core/src/validate';
import type { ConsolePage } from '../page';

const STATUSES = ['queued', 'sending', 'sent', 'deferred', 'failed', 'bounced', 'cancelled'] as const;
const messagesFilter = Joi.object({
  to: Joi.string().trim().max(254).allow(''),
  status: Joi.string().valid(...STATUSES, ''),
  before: Joi.string().max(80).pattern(/^\d+_[0-9a-f-]{36}$/),
});

export const messagesPage: ConsolePage = {
  path: '/messages',
  title: 'Messages',
  templates: {
    messages: `<form method="get" action="/admin/messages" class="card">
<label>To <input name="to" type="search" value="<%= it.to %>" placeholder="recipient address"></label>
<label>Status <select name="status"><option value="">any</option><% it.statuses.forEach(function (s) { %><option<% if (s === it.status) { %> selected<% } %>><%= s %></option><% }) %></select></label>
<button>Find</button>
</form>
<table><thead><tr><th>Created</th><th>Account</th><th>Kind</th><th>To</th><th>Subject</th><th>Status</th><th>Attempts</th><th>SMTP answer</th><th>Bounce</th></tr></thead><tbody>
<% it.page.rows.forEach(function (m) { %><tr><td><%= m.created_at %></td><td><%= m.account %></td><td><%= m.kind %></td><td><%= m.to %></td><td><%= m.subject %></td><td><%= m.status %></td><td><%= m.attempts %></td><td><%= m.smtp_response || m.last_error || '' %></td><td><% if (m.bounce) { %><%= m.bounce.reason %> (<%= m.bounce.class %><%= m.bounce.dead ? ', suppressed' : '' %>)<% if (m.bounce.status) { %> <%= m.bounce.status %><% } %><% } %></td></tr><% }) %>
</tbody></table>
<% if (!it.page.rows.length) { %><p class="muted">No messages.</p><% } %>
<% if (it.page.next) { %><p><a rel="next" href="/admin/messages?to=<%= encodeURIComponent(it.to) %>&amp;status=<%= encodeURIComponent(it.status) %>&amp;before=<%= it.page.next %>">Older</a></p><% } %>`,
  },
  routes(router, ctx) {
    router.get('/messages', async (req, res) => {
      const filter = validate<{ to?: string; status?: string; before?: string }>(messagesFilter, req.query);
      const page = await browseMessages(ctx.db, { to: filter.to || undefined, status: filter.status || undefined, before: filter.before });
      ctx.render(req, res, 'messages', 'Messages', { page, to: filter.to ?? '', status: filter.status ?? '', statuses: STATUSES });
    });
  },
};
