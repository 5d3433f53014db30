import { listAccounts } from '../../../../core/src/accounts';
import { listDomains } from '../../../../core/src/domains';
import { actOnMxMessage, listMxMessages } from '../../../../core/src/mx/browse';
import { addRoute, changeRoute, listRoutes, mxMessageIdParam, removeRoute, routeInput, routePatch } from '../../../../core/src/mx/routes';
import { idParam, validate } from '../../../../core/src/validate';
import type { Request } from 'express';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { viewScope, field, numberField, type ConsolePage } from '../page';
import type { Db } from '../../../../core/src/db';
import { creation, mxMessageChange, routeChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';

/** A blank form field as null (clears the value), else a number (joi names a bad one). */
const nullable = (req: Request, name: string) => (field(req, name) === '' ? null : Number(field(req, name)));

const AUTH = `<% var a = m.auth || {}; %>SPF <%= (a.spf || {}).result || '-' %> · DKIM <%= (a.dkim || []).map(function (d) { return d.domain + ' ' + d.result; }).join(', ') || 'none' %> · DMARC <%= (a.dmarc || {}).result || '-' %><% if ((a.dmarc || {}).policy) { %> (p=<%= a.dmarc.policy %>)<% } %> · ARC <%= (a.arc || {}).result || '-' %><% if (m.spam) { %> · spam <%= m.spam.score %><% } %>`;

/** docs/mx.md in the console: the MX's inbound routes, its held messages (release, drop) and the last messages it took. */
export const mxPage: ConsolePage = {
  path: '/mx',
  title: 'MX',
  templates: {
    mx: `<h2>Routes</h2>
<table class="mx-routes"><thead><tr><th>Id</th><th>Account</th><th>Domain</th><th>Match</th><th>Action, endpoint, spam threshold</th><th></th></tr></thead><tbody>
<% it.routes.forEach(function (r) { %><tr id="route-<%= r.id %>"><td><%= r.id %></td><td><%= r.account %></td><td><%= it.domains[r.domain] || r.domain %></td><td><code><%= r.match %></code></td>
<td><form method="post" action="/admin/mx/routes/<%= r.id %>" class="inline">${CSRF_FIELD}<select name="action"><% it.actions.forEach(function (a) { %><option<% if (a === r.action) { %> selected<% } %>><%= a %></option><% }) %></select>
<input name="endpoint" type="number" min="1" placeholder="every endpoint" value="<%= r.endpoint === null ? '' : r.endpoint %>"> <input name="spam_threshold" type="number" step="any" placeholder="no threshold" value="<%= r.spam_threshold === null ? '' : r.spam_threshold %>"> <button>Save</button></form></td>
<td><form method="post" action="/admin/mx/routes/<%= r.id %>/delete" class="inline">${CSRF_FIELD}<button>Delete</button></form></td></tr><% }) %>
</tbody></table>
<% if (!it.routes.length) { %><p class="muted">No routes: the MX refuses all mail for inbound domains until one is added.</p><% } %>
<form method="post" action="/admin/mx/routes" class="card">${CSRF_FIELD}
<h2>New route</h2>
${ACCOUNT_SELECT}
<label>Domain <input name="domain" required maxlength="253" placeholder="in.example (verified, inbound)"></label>
<label>Match <input name="match" required maxlength="64" placeholder="support, support+* or *"></label>
<label>Action <select name="action"><% it.actions.forEach(function (a) { %><option><%= a %></option><% }) %></select></label>
<label>Endpoint <input name="endpoint" type="number" min="1" placeholder="every endpoint"></label>
<label>Spam threshold <input name="spam_threshold" type="number" step="any"></label>
<button>Add route</button>
</form>
<h2>Held</h2>
<table class="mx-held"><thead><tr><th>Received</th><th>Account</th><th>From</th><th>To</th><th>Subject</th><th>Why</th><th>Authentication</th><th></th></tr></thead><tbody>
<% it.held.forEach(function (m) { %><tr id="held-<%= m.id %>"><td><%= m.received_at.toISOString() %></td><td><%= m.account %></td><td><%= m.envelope.from %></td><td><%= m.envelope.to.join(', ') %></td><td><%= m.subject %></td><td><%= m.reason %></td><td>${AUTH}</td>
<td><form method="post" action="/admin/mx/messages/<%= m.id %>/release" class="inline">${CSRF_FIELD}<button>Release</button></form>
<form method="post" action="/admin/mx/messages/<%= m.id %>/drop" class="inline">${CSRF_FIELD}<button>Drop</button></form></td></tr><% }) %>
</tbody></table>
<% if (!it.held.length) { %><p class="muted">Nothing held.</p><% } %>
<h2>Last messages</h2>
<table class="mx-messages"><thead><tr><th>Received</th><th>Account</th><th>Client</th><th>From</th><th>To</th><th>Subject</th><th>Status</th><th>Authentication</th></tr></thead><tbody>
<% it.messages.forEach(function (m) { %><tr id="message-<%= m.id %>"><td><%= m.received_at.toISOString() %></td><td><%= m.account %></td><td><%= m.client.address %> (<%= m.client.helo %>)</td><td><%= m.envelope.from %></td><td><%= m.envelope.to.join(', ') %></td><td><%= m.subject %></td><td><%= m.status %><% if (m.reason) { %> (<%= m.reason %>)<% } %></td><td>${AUTH}</td></tr><% }) %>
</tbody></table>
<% if (!it.messages.length) { %><p class="muted">The MX has taken no mail yet.</p><% } %>`,
  },
  routes(router, ctx) {
    router.get('/mx', async (req, res) => {
      const [routes, held, messages, accounts, domains] = await Promise.all([
        listRoutes(ctx.db, viewScope(res)),
        listMxMessages(ctx.db, { status: 'held', limit: 100, account: viewScope(res) }),
        listMxMessages(ctx.db, { limit: 50, account: viewScope(res) }),
        listAccounts(ctx.db, viewScope(res)),
        listDomains(ctx.db, viewScope(res)),
      ]);
      const names = Object.fromEntries(domains.map((d) => [d.id, d.name]));
      ctx.render(req, res, 'mx', 'MX', { routes, held, messages, accounts, domains: names, actions: ['webhook', 'hold', 'reject'], account: '' });
    });
    router.post('/mx/routes', async (req, res) => {
      const input = validate(routeInput, {
        account: numberField(req, 'account'),
        domain: field(req, 'domain'),
        match: field(req, 'match'),
        action: field(req, 'action'),
        endpoint: nullable(req, 'endpoint'),
        spam_threshold: nullable(req, 'spam_threshold'),
      });
      const route = await audit(req, res, 'console')(ctx.db, creation('route', input.account), (db: Db) => addRoute(db, input));
      await ctx.redirect(req, res, '/admin/mx', `Route ${route.id} added: ${route.match} -> ${route.action}.`);
    });
    router.post('/mx/routes/:id', async (req, res) => {
      const patch = validate(routePatch, { action: field(req, 'action'), endpoint: nullable(req, 'endpoint'), spam_threshold: nullable(req, 'spam_threshold') });
      const id = validate(idParam, req.params.id);
      const route = await audit(req, res, 'console')(ctx.db, routeChange('update', id), (db: Db) => changeRoute(db, id, patch));
      await ctx.redirect(req, res, '/admin/mx', `Route ${route.id} saved: ${route.match} -> ${route.action}.`);
    });
    router.post('/mx/routes/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, { ...routeChange('delete', id), after: undefined }, (db: Db) => removeRoute(db, id));
      await ctx.redirect(req, res, '/admin/mx', `Route ${id} deleted.`);
    });
    for (const action of ['release', 'drop'] as const) {
      router.post(`/mx/messages/:id/${action}`, async (req, res) => {
        const id = validate<string>(mxMessageIdParam, req.params.id);
        await audit(req, res, 'console')(ctx.db, mxMessageChange(action, id), (db: Db) => actOnMxMessage(db, id, action));
        await ctx.redirect(req, res, '/admin/mx', action === 'release' ? `Message ${id} released.` : `Message ${id} dropped.`);
      });
    }
  },
};
