import { listAccounts } from '../../../../core/src/accounts';
import { addTrackingDomain, getTrackingDomain, listTrackingDomains, removeTrackingDomain, verifyTrackingDomain } from '../../../../core/src/tracking-domains';
import { trackingDomainInput } from '../../../../core/src/tracking-domains/schema';
import { idParam, validate } from '../../../../core/src/validate';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { viewScope, field, numberField, type ConsolePage } from '../page';
import type { Db } from '../../../../core/src/db';
import { creation, trackingDomainChange } from '../../../../core/src/changes';
import { audit, auditAfter } from '../../middleware/audit';

/**
 * Tracking domains (docs/tracking-domains.md): the CNAME to publish (one click selects it), what DNS answered, the
 * certificate's dates, and "Check now" (which orders the certificate when DNS shows the CNAME), "Remove".
 */
export const trackingDomainsPage: ConsolePage = {
  path: '/tracking-domains',
  title: 'Tracking domains',
  templates: {
    trackingDomains: `<table><thead><tr><th>Id</th><th>Account</th><th>Name</th><th>Status</th><th>Links use it</th><th>Certificate until</th><th>Reason</th></tr></thead><tbody>
<% it.domains.forEach(function (d) { %><tr><td><%= d.id %></td><td><%= d.account %></td><td><a href="/admin/tracking-domains/<%= d.id %>"><%= d.display_name %></a></td>
<td class="status-<%= d.status %>"><%= d.status %></td><td><%= d.live ? 'yes' : 'no (PUBLIC_URL)' %></td><td><%= d.certificate ? d.certificate.not_after : '' %></td><td><%= d.reason || '' %></td></tr><% }) %>
</tbody></table>
<% if (!it.domains.length) { %><p class="muted">No tracking domains yet: click and open links use PUBLIC_URL.</p><% } %>
<form method="post" action="/admin/tracking-domains" class="card">${CSRF_FIELD}
<h2>Add a tracking domain</h2>
<p class="muted">A name of the account's own domain (such as track.brand.example) for its click and open links. Publish the CNAME shown next; the service then gets its certificate.</p>
${ACCOUNT_SELECT}
<label>Name <input name="name" required maxlength="300" size="40" placeholder="track.brand.example"></label>
<button>Add tracking domain</button>
</form>`,
    trackingDomain: `<p><a href="/admin/tracking-domains">All tracking domains</a> · account <%= it.domain.account %> · <strong class="status-<%= it.domain.status %>" id="tracking-status"><%= it.domain.status %></strong>
 · checked <%= it.domain.checked_at || 'not yet' %> · links <%= it.domain.live ? 'use it' : 'use PUBLIC_URL' %></p>
<% if (it.domain.reason) { %><p class="error" id="tracking-reason"><%= it.domain.reason %></p><% } %>
<form method="post" action="/admin/tracking-domains/<%= it.domain.id %>/verify" class="inline">${CSRF_FIELD}<button>Check now</button></form>
<form method="post" action="/admin/tracking-domains/<%= it.domain.id %>/delete" class="inline">${CSRF_FIELD}<button>Remove</button></form>
<h2>Record to publish</h2>
<table id="record"><thead><tr><th>Type</th><th>Name</th><th>Value</th><th>DNS answered</th></tr></thead><tbody>
<tr><td><%= it.domain.record.type %></td><td><code class="copy"><%= it.domain.record.host %></code></td><td><code class="copy value" tabindex="0"><%= it.domain.record.value %></code></td>
<td><% if (it.domain.seen.length) { %><% it.domain.seen.forEach(function (s) { %><code class="seen"><%= s %></code><br><% }) %><% } else { %><span class="muted">nothing</span><% } %></td></tr>
</tbody></table>
<h2>Certificate</h2>
<% if (it.domain.certificate) { %><p id="certificate">Issued <%= it.domain.certificate.issued_at %> · valid until <%= it.domain.certificate.not_after %> · renewed from <%= it.domain.certificate.renew_at %></p>
<% } else { %><p class="muted" id="certificate">None yet.</p><% } %>`,
  },
  routes(router, ctx) {
    router.get('/tracking-domains', async (req, res) => {
      const [domains, accounts] = await Promise.all([listTrackingDomains(ctx.db, viewScope(res)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'trackingDomains', 'Tracking domains', { domains, accounts });
    });
    router.post('/tracking-domains', async (req, res) => {
      const input = validate(trackingDomainInput, { account: numberField(req, 'account'), name: field(req, 'name') });
      const domain = await audit(req, res, 'console')(ctx.db, creation('tracking-domain', input.account), (db: Db) => addTrackingDomain(db, input));
      await ctx.redirect(req, res, `/admin/tracking-domains/${domain.id}`, `Tracking domain ${domain.display_name} added: publish its CNAME, then check it.`);
    });
    router.get('/tracking-domains/:id', async (req, res) => {
      const domain = await getTrackingDomain(ctx.db, validate(idParam, req.params.id));
      ctx.render(req, res, 'trackingDomain', `Tracking domain ${domain.display_name}`, { domain });
    });
    router.post('/tracking-domains/:id/verify', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const domain = await auditAfter(req, res, 'console')(ctx.db, trackingDomainChange('verify', id), (db: Db) => verifyTrackingDomain(db, id));
      await ctx.redirect(req, res, `/admin/tracking-domains/${domain.id}`, `Checked: ${domain.status}.`);
    });
    router.post('/tracking-domains/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, { ...trackingDomainChange('delete', id), after: undefined }, (db: Db) => removeTrackingDomain(db, id));
      await ctx.redirect(req, res, '/admin/tracking-domains', `Tracking domain ${id} removed.`);
    });
  },
};
