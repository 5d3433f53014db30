import { idParam } from '../../../../core/src/admin-schemas';
import { previewCopy } from '../../../../core/src/broadcasts/copy';
import { audienceQuery, broadcastChanges, broadcastInput } from '../../../../core/src/broadcasts/schema';
import { dryRunAudience } from '../../../../core/src/broadcasts/segment';
import { BadRequest } from '../../../../core/src/errors';
import { changeBroadcast, createBroadcast, getBroadcast, listBroadcasts } from '../../../../core/src/broadcasts/service';
import { browseLists } from '../../../../core/src/subscribers/browse';
import { validate } from '../../../../core/src/validate';
import { readNote } from '../../../../core/src/replicas';
import { CSRF_FIELD } from '../views';
import { field, type ConsolePage } from '../page';
import { broadcastCharts, broadcastLiveSection } from '../stats-section';
import type { Db } from '../../../../core/src/db';
import { broadcastChange, broadcastCreation } from '../../../../core/src/audit/changes';
import { audit, auditAfter } from '../../middleware/audit';

/** The buttons a broadcast's state allows (the state machine of broadcasts/service.ts). */
const ACTIONS: Record<string, { status: string; label: string }[]> = {
  draft: [{ status: 'sending', label: 'Send' }, { status: 'cancelled', label: 'Cancel' }],
  scheduled: [{ status: 'paused', label: 'Pause' }, { status: 'cancelled', label: 'Cancel' }],
  sending: [{ status: 'paused', label: 'Pause' }, { status: 'cancelled', label: 'Cancel' }],
  paused: [{ status: 'sending', label: 'Resume' }, { status: 'cancelled', label: 'Cancel' }],
};

/** The form's audience field: JSON, or empty for the whole list. */
function audienceField(raw: string): unknown {
  if (!raw.trim()) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    throw new BadRequest('audience: not valid JSON');
  }
}

const PROGRESS = `<%= b.audience %> in the audience · <%= b.sent %> sent · <%= b.failed %> failed · <%= b.skipped %> skipped · <%= b.pending %> pending`;

export const broadcastsPage: ConsolePage = {
  path: '/broadcasts',
  title: 'Broadcasts',
  templates: {
    broadcasts: `<table><thead><tr><th>Id</th><th>List</th><th>Subject</th><th>Status</th><th>Progress</th><th>Send at</th><th>Created</th></tr></thead><tbody>
<% it.broadcasts.forEach(function (b) { %><tr><td><%= b.id %></td><td><code><%= b.list %></code></td><td><a href="/admin/broadcasts/<%= b.id %>"><%= b.subject %></a></td><td><%= b.status %></td><td>${PROGRESS}</td><td><%= b.send_at || '-' %></td><td><%= b.created_at %></td></tr><% }) %>
</tbody></table>
<% if (!it.broadcasts.length) { %><p class="muted">No broadcasts.</p><% } %>
<form method="post" action="/admin/broadcasts" class="card">${CSRF_FIELD}
<h2>New broadcast</h2>
<label>List <select name="list" required><% it.lists.forEach(function (l) { %><option value="<%= l.key %>"><%= l.name %> (<%= l.key %>, account <%= l.account %>, <%= l.subscribers %> active)</option><% }) %></select></label>
<label>Subject <input name="subject" required maxlength="998" size="60"></label>
<label>HTML <textarea name="html" placeholder="&lt;p&gt;Hello {{name}}&lt;/p&gt; ... &lt;a href=&quot;{{unsubscribe_url}}&quot;&gt;Unsubscribe&lt;/a&gt;"></textarea></label>
<label>Text <textarea name="text" placeholder="Plain text part (made from the HTML when left empty)"></textarea></label>
<label>Send at (UTC, optional) <input name="send_at" type="datetime-local"></label>
<label>Audience (JSON, optional; the whole list when empty): <code>{"tags": [...], "fields": {"country": "DE"}, "engaged": {"not_clicked": 12}, "subscribed_after": "2026-01-01T00:00:00Z"}</code> <textarea name="audience" rows="3"></textarea></label>
<button formaction="/admin/broadcasts/audience" formnovalidate>Count the audience</button>
<label><input name="track_clicks" type="checkbox" value="1"> Track clicks (links go through this service)</label>
<label><input name="track_opens" type="checkbox" value="1"> Track opens (a 1x1 image; an overestimate, see the docs)</label>
<p class="muted">Placeholders: {{name}}, {{email}}, {{fields.x}}, {{unsubscribe_url}}. It is saved as a draft: preview it, then send.</p>
<button>Save draft</button>
</form>`,
    broadcast: `<p><a href="/admin/broadcasts">All broadcasts</a> · list <code><%= it.b.list %></code> · <strong><%= it.b.status %></strong><% if (it.b.send_at) { %> · send at <%= it.b.send_at %><% } %><% if (it.b.track_clicks) { %> · clicks tracked<% } %><% if (it.b.track_opens) { %> · opens tracked<% } %></p>
<% if (it.b.segment || it.b.tags.length) { %><p id="segment">Audience: <code><%= JSON.stringify(Object.assign(it.b.tags.length ? { tags: it.b.tags } : {}, it.b.segment || {})) %></code></p><% } %>
<% var b = it.b; %><p id="progress">${PROGRESS}<% if (b.started_at) { %> · started <%= b.started_at %><% } %><% if (b.finished_at) { %> · finished <%= b.finished_at %><% } %></p>
<% it.actions.forEach(function (a) { %><form method="post" action="/admin/broadcasts/<%= it.b.id %>/status" class="inline">${CSRF_FIELD}<input type="hidden" name="status" value="<%= a.status %>"><button><%= a.label %></button></form> <% }) %>
<%~ it.charts %>
<h2>Preview</h2>
<p class="muted">As a reader named "Reader" would get it. The HTML is shown as its source: the console runs no content.</p>
<section class="card"><p><strong>Subject:</strong> <span id="preview-subject"><%= it.preview.subject %></span></p>
<% if (it.preview.html !== null) { %><h3>HTML</h3><pre id="preview-html"><%= it.preview.html %></pre><% } %>
<% if (it.preview.text !== null) { %><h3>Text</h3><pre id="preview-text"><%= it.preview.text %></pre><% } %></section>`,
  },
  routes(router, ctx) {
    router.get('/broadcasts', async (req, res) => {
      const [broadcasts, lists] = await Promise.all([listBroadcasts(ctx.db, { limit: 100 }), browseLists(ctx.db)]);
      ctx.render(req, res, 'broadcasts', 'Broadcasts', { broadcasts, lists });
    });
    // the dry run (broadcasts/segment.ts): how many of the list the audience takes now, from the replica when there is one
    router.post('/broadcasts/audience', async (req, res) => {
      const query = validate(audienceQuery, { list: field(req, 'list'), audience: audienceField(field(req, 'audience')) });
      const count = await dryRunAudience(ctx.reads.db, query.list, query.audience ?? {});
      const note = await readNote(ctx.reads);
      await ctx.redirect(req, res, '/admin/broadcasts', `This audience of list ${query.list} is ${count} ${count === 1 ? 'person' : 'people'} now.${note ? ` ${note}` : ''}`);
    });
    router.post('/broadcasts', async (req, res) => {
      const sendAt = field(req, 'send_at');
      const audience = audienceField(field(req, 'audience'));
      const input = validate(broadcastInput, {
        list: field(req, 'list'),
        subject: field(req, 'subject'),
        ...(field(req, 'html') ? { html: field(req, 'html') } : {}),
        ...(field(req, 'text') ? { text: field(req, 'text') } : {}),
        // a datetime-local field has no zone: the form says UTC
        ...(sendAt ? { send_at: /Z|[+-]\d\d:\d\d$/.test(sendAt) ? sendAt : `${sendAt}Z` } : {}),
        ...(field(req, 'track_clicks') ? { track_clicks: true } : {}),
        ...(field(req, 'track_opens') ? { track_opens: true } : {}),
        ...(audience ? { audience } : {}),
      });
      const broadcast = await audit(req, res, 'console')(ctx.db, broadcastCreation(input.list), (db: Db) => createBroadcast(db, input));
      await ctx.redirect(req, res, `/admin/broadcasts/${broadcast.id}`, `Broadcast ${broadcast.id} saved as a draft.`);
    });
    router.post('/broadcasts/:id/status', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(broadcastChanges, { status: field(req, 'status') });
      const broadcast = await auditAfter(req, res, 'console')(ctx.db, broadcastChange(id), (db: Db) => changeBroadcast(db, id, changes));
      await ctx.redirect(req, res, `/admin/broadcasts/${id}`, `Broadcast ${id} is ${broadcast.status}.`);
    });
    router.get('/broadcasts/:id', async (req, res) => {
      const b = await getBroadcast(ctx.db, validate(idParam, req.params.id));
      const [charts, live] = await Promise.all([broadcastCharts(ctx.db, b.id, req.query), b.status === 'sending' || b.status === 'paused' ? broadcastLiveSection(ctx.db, b.id) : '']);
      // a broadcast going out: the page reloads itself (a header, not a script: the console has none)
      if (b.status === 'sending') res.set('Refresh', '10');
      ctx.render(req, res, 'broadcast', `Broadcast ${b.id}: ${b.subject}`, { b, actions: ACTIONS[b.status] ?? [], preview: previewCopy(b), charts: live + charts });
    });
  },
};
