import { MESSAGE_STATUSES, searchMessages } from '../../../../core/src/operator/search';
import { readNote as replicaNote } from '../../../../core/src/replicas';
import { messageStory } from '../../../../core/src/operator/story';
import { cancelMessage, messageIdParam, retryMessage } from '../../../../core/src/sending/message-actions';
import { validate } from '../../../../core/src/validate';
import type { ConsolePage } from '../page';
import { query, viewScope } from '../page';
import { CSRF_FIELD } from '../views';
import { messageChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import type { Db } from '../../../../core/src/db';

const KIND_WORDS: Record<string, string> = {
  all: 'every message',
  id: 'the message with this id',
  message_id: 'the message with this Message-ID',
  recipient: 'messages to this address',
  domain: 'messages to any address at this domain',
  subject: 'messages whose subject has all these words',
};

/** The search's query string without the cursor, for the next page's link. */
const PAGE_QUERY = `q=<%= encodeURIComponent(it.q) %>&amp;status=<%= encodeURIComponent(it.status) %>&amp;from=<%= encodeURIComponent(it.from) %>&amp;to=<%= encodeURIComponent(it.to) %>`;

export const messagesPage: ConsolePage = {
  path: '/messages',
  title: 'Messages',
  templates: {
    messages: `<form method="get" action="/admin/messages" class="card search">
<label>Find <input name="q" type="search" size="40" value="<%= it.q %>" placeholder="address, domain, subject words, id or <Message-ID>"></label>
<label>Status <select name="status"><option value="">any</option><% it.statuses.forEach(function (s) { %><option<% if (s === it.status) { %> selected<% } %>><%= s %></option><% }) %></select></label>
<label>From <input type="date" name="from" value="<%= it.from %>"></label>
<label>To <input type="date" name="to" value="<%= it.to %>"></label>
<button>Find</button>
<p class="muted">An address finds its messages; a domain (<code>defer.test</code>) every address at it; a UUID or a <code>&lt;Message-ID&gt;</code> one message; anything else the words of the subject. Dates are UTC days, both included.</p>
</form>
<% if (it.readNote) { %><p class="muted" id="read-note"><%= it.readNote %></p><% } %>
<p id="search-kind">Showing <%= it.kindWords %><% if (it.status) { %>, status <strong><%= it.status %></strong><% } %><% if (it.from || it.to) { %>, created <%= it.from || '…' %> to <%= it.to || '…' %><% } %>, newest first.</p>
<table class="messages"><thead><tr><th>Created</th><th>Account</th><th>Kind</th><th>To</th><th>Subject</th><th>Status</th><th>Attempts</th><th>SMTP answer</th><th>Bounce</th></tr></thead><tbody>
<% it.page.rows.forEach(function (m) { %><tr><td><a href="/admin/messages/<%= m.id %>"><%= m.created_at %></a></td><td><%= m.account %></td><td><%= m.kind %></td><td><%= m.to %></td><td><a href="/admin/messages/<%= m.id %>"><%= m.subject %></a></td><td><%= m.status %></td><td><%= m.attempts %></td><td><%= m.smtp_response || m.last_error || '' %></td><td><% if (m.bounce) { %><%= m.bounce.reason %> (<%= m.bounce.class %><%= m.bounce.dead ? ', suppressed' : '' %>)<% if (m.bounce.status) { %> <%= m.bounce.status %><% } %><% } %></td></tr><% }) %>
</tbody></table>
<% if (!it.page.rows.length) { %><p class="muted">No messages.</p><% } %>
<% if (it.page.next) { %><p><a rel="next" href="/admin/messages?${PAGE_QUERY}&amp;before=<%= it.page.next %>">Older</a></p><% } %>`,
    message: `<p><a href="/admin/messages">All messages</a> · <a href="/admin/messages?q=<%= encodeURIComponent(it.m.to) %>">Messages to <%= it.m.to %></a></p>
<table class="facts"><tbody>
<tr><th>Status</th><td id="message-status"><strong><%= it.m.status %></strong><% if (it.s.next_attempt_at) { %> · next attempt at <%= it.s.next_attempt_at %><% } %></td></tr>
<tr><th>To</th><td><%= it.m.to %></td></tr>
<tr><th>From mailbox</th><td><a href="/admin/mailboxes/<%= it.m.mailbox.id %>"><%= it.m.mailbox.address %></a> (account <%= it.m.account %>)</td></tr>
<tr><th>Kind</th><td><%= it.m.kind %><% if (it.m.broadcast) { %> · <a href="/admin/broadcasts/<%= it.m.broadcast %>">broadcast <%= it.m.broadcast %></a><% } %><% if (it.m.prospect) { %> · <a href="/admin/campaigns/<%= it.m.prospect.campaign %>">campaign <%= it.m.prospect.campaign %></a>, prospect <%= it.m.prospect.id %>, step <%= it.m.prospect.step %><% } %><% if (it.m.send_id) { %> · send <code><%= it.m.send_id %></code><% } %></td></tr>
<tr><th>Message id</th><td><code><%= it.m.id %></code></td></tr>
<tr><th>Message-ID</th><td><code><%= it.m.message_id %></code></td></tr>
<tr><th>Attempts</th><td><%= it.m.attempts %></td></tr>
</tbody></table>
<% if (it.s.actions.retry || it.s.actions.cancel) { %><p class="actions">
<% if (it.s.actions.retry) { %><form method="post" action="/admin/messages/<%= it.m.id %>/retry" class="inline">${CSRF_FIELD}<button>Retry now</button></form><% } %>
<% if (it.s.actions.cancel) { %><form method="post" action="/admin/messages/<%= it.m.id %>/cancel" class="inline">${CSRF_FIELD}<button>Cancel</button></form><% } %>
</p><% } %>
<h2>What happened</h2>
<table class="story"><thead><tr><th>When (UTC)</th><th>What</th><th>Detail</th></tr></thead><tbody>
<% it.s.steps.forEach(function (step) { %><tr><td><%= step.at %></td><td><strong><%= step.what %></strong></td><td><%= step.detail %></td></tr><% }) %>
</tbody></table>
<h2>Events and their webhook deliveries</h2>
<% if (!it.s.events.length) { %><p class="muted">No events: none was written for this message (an event is written only when a webhook of its account listens to its type).</p><% } %>
<% it.s.events.forEach(function (e) { %><section class="card event"><p><strong><%= e.type %></strong> at <%= e.at %> · <% if (e.dispatched_at) { %>fanned out at <%= e.dispatched_at %><% } else { %>not fanned out yet<% } %> · <code><%= e.id %></code></p>
<% if (e.deliveries.length) { %><table><thead><tr><th>When</th><th>Webhook</th><th>Attempt</th><th>Answer</th></tr></thead><tbody>
<% e.deliveries.forEach(function (d) { %><tr><td><%= d.at %></td><td><a href="/admin/webhooks/<%= d.webhook %>"><%= d.url %></a></td><td><%= d.attempt %></td><td><%= d.status_code === null ? 'no answer' : 'HTTP ' + d.status_code %><% if (d.error) { %>: <%= d.error %><% } %></td></tr><% }) %>
</tbody></table><% } else { %><p class="muted">No delivery yet.</p><% } %></section><% }) %>
<h2>Headers as sent</h2>
<p class="muted">Composed again from the stored message, dated when it went out; the DKIM signature the transport adds is not shown.</p>
<pre class="headers copy" id="message-headers"><%= it.s.headers %></pre>`,
  },
  routes(router, ctx) {
    router.get('/messages', async (req, res) => {
      const [page, readNote] = await Promise.all([searchMessages(ctx.reads.db, req.query, viewScope(res)), replicaNote(ctx.reads)]);
      ctx.render(req, res, 'messages', 'Messages', {
        page,
        readNote,
        q: query(req, 'q'),
        status: query(req, 'status'),
        from: query(req, 'from'),
        to: query(req, 'to'),
        statuses: MESSAGE_STATUSES,
        kindWords: KIND_WORDS[page.kind],
      });
    });
    router.get('/messages/:id', async (req, res) => {
      const story = await messageStory(ctx.db, ctx.kinds, validate(messageIdParam, req.params.id));
      ctx.render(req, res, 'message', `Message to ${story.message.to}: ${story.message.subject}`, { s: story, m: story.message });
    });
    router.post('/messages/:id/retry', async (req, res) => {
      const id = validate(messageIdParam, req.params.id);
      const done = await audit(req, res, 'console')(ctx.db, messageChange('retry', id), (db: Db) => retryMessage(db, id));
      await ctx.redirect(req, res, `/admin/messages/${id}`, `Message retried: it is ${done.status} and goes out now.`);
    });
    router.post('/messages/:id/cancel', async (req, res) => {
      const id = validate(messageIdParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, messageChange('cancel', id), (db: Db) => cancelMessage(db, id));
      await ctx.redirect(req, res, `/admin/messages/${id}`, 'Message cancelled: it will not be sent.');
    });
  },
};
