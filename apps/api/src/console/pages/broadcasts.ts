import { previewCopy } from '../../../../core/src/templates/list-copy';
import { audienceQuery, broadcastChanges, broadcastInput } from '../../../../core/src/broadcasts/schema';
import { dryRunAudience } from '../../../../core/src/broadcasts/segment';
import { AppError } from '../../../../core/src/errors';
import type { Request, Response } from 'express';
import { previewTemplate, listTemplates } from '../../../../core/src/templates/service';
import { typedNumber } from '../editors';
import { allowComposeScript, audienceOf, AUDIENCE_SCRIPT, COMPOSE_FORM, draftOf, EMPTY_DRAFT, fieldRows, previewVariables, sourceOf, variableFields, type Draft } from './compose';
import { changeBroadcast, createBroadcast, getBroadcast, listBroadcasts } from '../../../../core/src/broadcasts/service';
import { browseLists } from '../../../../core/src/subscribers/browse';
import { idParam, validate } from '../../../../core/src/validate';
import { readNote } from '../../../../core/src/replicas';
import { CSRF_FIELD } from '../views';
import { viewScope, field, type ConsolePage } from '../page';
import { broadcastCharts, broadcastLiveSection } from '../stats-section';
import type { Db } from '../../../../core/src/db';
import { broadcastChange, broadcastCreation } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';

/** The buttons a broadcast's state allows (the state machine of broadcasts/service.ts). */
const ACTIONS: Record<string, { status: string; label: string }[]> = {
  draft: [{ status: 'sending', label: 'Send' }, { status: 'cancelled', label: 'Cancel' }],
  scheduled: [{ status: 'paused', label: 'Pause' }, { status: 'cancelled', label: 'Cancel' }],
  sending: [{ status: 'paused', label: 'Pause' }, { status: 'cancelled', label: 'Cancel' }],
  paused: [{ status: 'sending', label: 'Resume' }, { status: 'cancelled', label: 'Cancel' }],
};

const PROGRESS = `<%= b.audience %> in the audience · <%= b.sent %> sent · <%= b.failed %> failed · <%= b.skipped %> skipped · <%= b.pending %> pending`;

export const broadcastsPage: ConsolePage = {
  path: '/broadcasts',
  title: 'Broadcasts',
  templates: {
    broadcasts: `<table><thead><tr><th>Id</th><th>List</th><th>Subject</th><th>Status</th><th>Progress</th><th>Send at</th><th>Created</th></tr></thead><tbody>
<% it.broadcasts.forEach(function (b) { %><tr><td><%= b.id %></td><td><code><%= b.list %></code></td><td><a href="/admin/broadcasts/<%= b.id %>"><%= b.subject %></a></td><td><%= b.status %></td><td>${PROGRESS}</td><td><%= b.send_at || '-' %></td><td><%= b.created_at %></td></tr><% }) %>
</tbody></table>
<% if (!it.broadcasts.length) { %><p class="muted">No broadcasts.</p><% } %>
${COMPOSE_FORM}`,
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
    const compose = async (req: Request, res: Response, draft: Draft, shown: { count?: string; preview?: boolean } = {}) => {
      const [broadcasts, lists, templates] = await Promise.all([listBroadcasts(ctx.db, { limit: 100, account: viewScope(res) }), browseLists(ctx.db, viewScope(res)), listTemplates(ctx.db, viewScope(res), 'template')]);
      const template = templates.find((t) => String(t.id) === draft.template);
      const variables = variableFields(template, draft);
      // the preview: the chosen template with the values typed, or the draft's own content for a sample reader (core/src/templates renders both)
      let preview = null;
      let previewError = null;
      try {
        if (shown.preview) preview = template ? await previewTemplate(ctx.db, template.id, previewVariables(variables)) : previewCopy({ subject: draft.subject, html: draft.html || null, text: draft.text || null });
      } catch (err) {
        // a variable still missing, a template that does not parse: said beside the form, which stays as typed
        if (!(err instanceof AppError)) throw err;
        previewError = err.message;
      }
      allowComposeScript(res);
      ctx.render(req, res, 'broadcasts', 'Broadcasts', { broadcasts, lists, templates, draft, variables, fieldRows: fieldRows(draft), count: shown.count, preview, previewError }, previewError ? 422 : 200);
    };
    router.get('/broadcasts', async (req, res) => compose(req, res, EMPTY_DRAFT));
    router.get('/static/audience.js', (_req, res) => {
      res.type('js').set('Cache-Control', 'no-cache').send(AUDIENCE_SCRIPT);
    });
    // the dry run (broadcasts/segment.ts): how many of the list the segment takes now, from the replica when there is one
    const countOf = async (draft: Draft) => {
      const query = validate(audienceQuery, { list: draft.list, audience: audienceOf(draft) });
      const count = await dryRunAudience(ctx.reads.db, query.list, query.audience ?? {});
      const note = await readNote(ctx.reads);
      return { count, words: `This audience of list ${query.list} is ${count} ${count === 1 ? 'person' : 'people'} now.${note ? ` ${note}` : ''}` };
    };
    // the form's Count button: the form again, as typed, with the count
    router.post('/broadcasts/audience', async (req, res) => {
      const draft = draftOf(sourceOf(req, 'body'));
      await compose(req, res, draft, { count: (await countOf(draft)).words });
    });
    // the live count of the compose script: JSON, a refusal as {ok: false, error}
    router.get('/broadcasts/audience', async (req, res) => {
      try {
        res.set('Cache-Control', 'no-store').json({ ok: true, count: (await countOf(draftOf(sourceOf(req, 'query')))).count });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        res.status(err.status).json({ ok: false, error: err.message });
      }
    });
    // the form's Preview button: the form again, as typed, with the template's variables and the rendered email
    router.post('/broadcasts/compose', async (req, res) => compose(req, res, draftOf(sourceOf(req, 'body')), { preview: true }));
    router.post('/broadcasts', async (req, res) => {
      const draft = draftOf(sourceOf(req, 'body'));
      const audience = audienceOf(draft);
      const input = validate(broadcastInput, {
        list: draft.list,
        ...(draft.template ? { template: typedNumber(draft.template) } : {}),
        ...(draft.subject ? { subject: draft.subject } : {}),
        ...(draft.html ? { html: draft.html } : {}),
        ...(draft.text ? { text: draft.text } : {}),
        // a datetime-local field has no zone: the form says UTC
        ...(draft.send_at ? { send_at: /Z|[+-]\d\d:\d\d$/.test(draft.send_at) ? draft.send_at : `${draft.send_at}Z` } : {}),
        ...(draft.track_clicks ? { track_clicks: true } : {}),
        ...(draft.track_opens ? { track_opens: true } : {}),
        ...(audience ? { audience } : {}),
      });
      const broadcast = await audit(req, res, 'console')(ctx.db, broadcastCreation(input.list), (db: Db) => createBroadcast(db, input));
      await ctx.redirect(req, res, `/admin/broadcasts/${broadcast.id}`, `Broadcast ${broadcast.id} saved as a draft.`);
    });
    router.post('/broadcasts/:id/status', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(broadcastChanges, { status: field(req, 'status') });
      const broadcast = await audit(req, res, 'console')(ctx.db, broadcastChange(id), (db: Db) => changeBroadcast(db, id, changes));
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
