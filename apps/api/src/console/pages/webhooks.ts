import { EVENT_TYPES } from '../../../../core/src/events';
import { listAccounts } from '../../../../core/src/accounts';
import { idParam, validate } from '../../../../core/src/validate';
import * as schemas from '../../../../core/src/webhooks/schema';
import { changeWebhook, createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, rotateSecret } from '../../../../core/src/webhooks/service';
import type { Request } from 'express';
import type { Db } from '../../../../core/src/db';
import { creation, webhookChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { viewScope, field, numberField, type ConsolePage } from '../page';

/** The event checkboxes of the create form, as one array whatever the number ticked (none: every event). */
function eventsField(req: Request): string[] | undefined {
  const value = (req.body as Record<string, unknown> | undefined)?.events;
  const events = (Array.isArray(value) ? value : value === undefined ? [] : [value]).filter((v): v is string => typeof v === 'string');
  return events.length ? events : undefined;
}

/** The secret, shown in the answer to create and rotate only (never stored in clear, never shown again). */
const SECRET = `<% if (it.secret) { %><section class="card"><h2><%= it.secretTitle %></h2>
<p>Copy it now: this is the only time it is shown. Receivers verify the <code>webhook-signature</code> header with it (Standard Webhooks).</p>
<p class="token" id="new-secret"><%= it.secret %></p></section><% } %>`;

export const webhooksPage: ConsolePage = {
  path: '/webhooks',
  title: 'Webhooks',
  templates: {
    webhooks: `${SECRET}
<table><thead><tr><th>Id</th><th>Account</th><th>URL</th><th>Events</th><th>State</th><th>Last success</th><th>Failing since</th><th></th></tr></thead><tbody>
<% it.webhooks.forEach(function (w) { %><tr><td><%= w.id %></td><td><%= w.account %></td><td><a href="/admin/webhooks/<%= w.id %>"><%= w.url %></a></td><td><%= w.events.join(', ') %></td>
<td><%= w.enabled ? 'enabled' : 'disabled' %><% if (w.disabled_reason) { %> <span class="muted">(<%= w.disabled_reason %>)</span><% } %></td><td><%= w.last_success_at || '-' %></td><td><%= w.failing_since || '-' %></td>
<td><form method="post" action="/admin/webhooks/<%= w.id %>/enabled" class="inline">${CSRF_FIELD}<input type="hidden" name="enabled" value="<%= w.enabled ? 'no' : 'yes' %>"><button><%= w.enabled ? 'Disable' : 'Enable' %></button></form>
<form method="post" action="/admin/webhooks/<%= w.id %>/rotate" class="inline">${CSRF_FIELD}<button>Rotate secret</button></form>
<form method="post" action="/admin/webhooks/<%= w.id %>/delete" class="inline">${CSRF_FIELD}<button>Delete</button></form></td></tr><% }) %>
</tbody></table>
<% if (!it.webhooks.length) { %><p class="muted">No webhooks.</p><% } %>
<form method="post" action="/admin/webhooks" class="card">${CSRF_FIELD}
<h2>New webhook</h2>
${ACCOUNT_SELECT}
<label>URL <input name="url" type="url" required maxlength="2000" size="50" placeholder="https://example.com/hooks/mail"></label>
<fieldset><legend>Events (none ticked: every event)</legend>
<% it.eventTypes.forEach(function (t) { %><label><input type="checkbox" name="events" value="<%= t %>"> <%= t %></label><% }) %>
</fieldset>
<button>Create webhook</button>
</form>`,
    webhook: `${SECRET}
<p><a href="/admin/webhooks">All webhooks</a> · account <%= it.webhook.account %> · <%= it.webhook.enabled ? 'enabled' : 'disabled' %> · events <%= it.webhook.events.join(', ') %></p>
<h2>Recent deliveries</h2>
<table><thead><tr><th>At</th><th>Event</th><th>Type</th><th>Attempt</th><th>Answer</th><th>Error</th></tr></thead><tbody>
<% it.deliveries.forEach(function (d) { %><tr><td><%= d.at %></td><td><code><%= d.event_id %></code></td><td><%= d.type %></td><td><%= d.attempt %></td><td><%= d.status_code === null ? '-' : d.status_code %></td><td><%= d.error || '' %></td></tr><% }) %>
</tbody></table>
<% if (!it.deliveries.length) { %><p class="muted">No deliveries yet.</p><% } %>`,
  },
  routes(router, ctx) {
    const showAll = async (req: Request, res: Parameters<typeof ctx.render>[1], extra: Record<string, unknown> = {}, status?: number) => {
      const [webhooks, accounts] = await Promise.all([listWebhooks(ctx.db, viewScope(res)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'webhooks', 'Webhooks', { webhooks, accounts, eventTypes: EVENT_TYPES, ...extra }, status);
    };
    router.get('/webhooks', (req, res) => showAll(req, res));
    router.post('/webhooks', async (req, res) => {
      const input = validate(schemas.webhookInput, { account: numberField(req, 'account'), url: field(req, 'url'), events: eventsField(req) });
      const { secret, ...webhook } = await audit(req, res, 'console')(ctx.db, creation('webhook'), (db: Db) => createWebhook(db, input));
      // in this answer only (no redirect), like a new key's token
      res.set('Cache-Control', 'no-store');
      await showAll(req, res, { secret, secretTitle: `Webhook ${webhook.id}: its signing secret` }, 201);
    });
    router.post('/webhooks/:id/enabled', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const webhook = await audit(req, res, 'console')(ctx.db, webhookChange('update', id), (db: Db) => changeWebhook(db, id, { enabled: field(req, 'enabled') === 'yes' }));
      await ctx.redirect(req, res, '/admin/webhooks', `Webhook ${webhook.id} is ${webhook.enabled ? 'enabled' : 'disabled'}.`);
    });
    router.post('/webhooks/:id/rotate', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const { secret, ...webhook } = await audit(req, res, 'console')(ctx.db, webhookChange('rotate', id), (db: Db) => rotateSecret(db, id));
      res.set('Cache-Control', 'no-store');
      await showAll(req, res, { secret, secretTitle: `Webhook ${webhook.id}: its new signing secret (the old one keeps signing for 24 hours)` });
    });
    router.post('/webhooks/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, { ...webhookChange('delete', id), after: undefined }, (db: Db) => deleteWebhook(db, id));
      await ctx.redirect(req, res, '/admin/webhooks', `Webhook ${id} deleted.`);
    });
    router.get('/webhooks/:id', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const webhook = await getWebhook(ctx.db, id);
      const deliveries = await listDeliveries(ctx.db, id, 100);
      ctx.render(req, res, 'webhook', `Webhook ${id}: ${webhook.url}`, { webhook, deliveries });
    });
  },
};
