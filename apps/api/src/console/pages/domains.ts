import { listAccounts } from '../../../../core/src/accounts';
import { addDomain, getDomain, listDomains, removeDomain, rotateDomain, verifyDomain, type DomainView } from '../../../../core/src/domains';
import { domainInput } from '../../../../core/src/domains/schema';
import { idParam, validate } from '../../../../core/src/validate';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { viewScope, field, numberField, type ConsolePage } from '../page';
import type { Db } from '../../../../core/src/db';
import { creation, domainChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';

/**
 * Sending domains (docs/domains.md): each domain's records to publish, with their status and what DNS answered, and
 * "Check now", "Rotate keys", "Remove". The console runs no script, so a value is copied by selecting it: one click
 * selects a whole value (`.copy`, CSS `user-select: all`), then the usual copy keys.
 */
export const domainsPage: ConsolePage = {
  path: '/domains',
  title: 'Domains',
  templates: {
    domains: `<table><thead><tr><th>Id</th><th>Account</th><th>Domain</th><th>Status</th><th>Checked</th><th>Reason</th></tr></thead><tbody>
<% it.domains.forEach(function (d) { %><tr><td><%= d.id %></td><td><%= d.account %></td><td><a href="/admin/domains/<%= d.id %>"><%= d.display_name %></a><% if (d.display_name !== d.name) { %> <span class="muted">(<%= d.name %>)</span><% } %></td>
<td class="status-<%= d.status %>"><%= d.status %></td><td><%= d.checked_at || 'not yet' %></td><td><%= d.reason || '' %></td></tr><% }) %>
</tbody></table>
<% if (!it.domains.length) { %><p class="muted">No sending domains yet.</p><% } %>
<form method="post" action="/admin/domains" class="card">${CSRF_FIELD}
<h2>Add a domain</h2>
<p class="muted">The service makes its DKIM keys (RSA 2048 and Ed25519) and shows the records to publish at your DNS host.</p>
${ACCOUNT_SELECT}
<label>Domain <input name="name" required maxlength="300" size="40" placeholder="brand.example"></label>
<button>Add domain</button>
</form>`,
    domain: `<p><a href="/admin/domains">All domains</a> · account <%= it.domain.account %> · <strong class="status-<%= it.domain.status %>"><%= it.domain.status %></strong>
<% if (it.domain.display_name !== it.domain.name) { %> · in DNS: <code><%= it.domain.name %></code><% } %>
 · checked <%= it.domain.checked_at || 'not yet' %><% if (it.domain.verified_at) { %> · verified <%= it.domain.verified_at %><% } %></p>
<% if (it.domain.reason) { %><p class="<%= it.domain.status === 'verified' ? 'muted' : 'error' %>" id="domain-reason"><%= it.domain.reason %></p><% } %>
<% if (it.domain.inbound) { %><p id="domain-inbound"><% if (it.domain.mx_found_at) { %>Inbound: the MX takes its mail (its MX record found <%= it.domain.mx_found_at %>)<% } else { %>Inbound: the MX refuses its mail until a check finds the Inbound MX record below (publish it, then Check now)<% } %></p><% } %>
<form method="post" action="/admin/domains/<%= it.domain.id %>/verify" class="inline">${CSRF_FIELD}<button>Check now</button></form>
<form method="post" action="/admin/domains/<%= it.domain.id %>/rotate" class="inline">${CSRF_FIELD}<button>Rotate keys</button></form>
<form method="post" action="/admin/domains/<%= it.domain.id %>/delete" class="inline">${CSRF_FIELD}<button>Remove</button></form>
<h2>Records to publish</h2>
<p class="muted">One click on a name or a value selects all of it; copy it into your DNS host's form (most ask for the name relative to your domain).</p>
<table id="records"><thead><tr><th>Purpose</th><th>Type</th><th>Name</th><th>Value</th><th>Status</th><th>DNS answered</th></tr></thead><tbody>
<% it.domain.records.forEach(function (r) { %><tr class="record" data-purpose="<%= r.purpose %>">
<td><%= r.purpose === 'dkim' ? 'DKIM (' + (r.algorithm === 'rsa' ? 'RSA' : 'Ed25519') + ')' : r.purpose === 'spf' ? 'SPF' : r.purpose === 'dmarc' ? 'DMARC' : r.purpose === 'inbound' ? 'Inbound MX' : 'VERP return path' %>
<% if (r.key_state && r.key_state !== 'active') { %><br><span class="muted"><%= r.key_state === 'next' ? 'new key: publish it, signing moves once DNS shows it' : 'old key: removable from ' + r.removable_at %></span><% } %>
<% if (!r.required) { %><br><span class="muted">not required</span><% } %></td>
<td><%= r.type %></td>
<td><code class="copy"><%= r.name %></code><br><span class="muted"><%= r.host %></span></td>
<td><code class="copy value" tabindex="0"><%= r.value %></code></td>
<td class="status-<%= r.status %>"><%= r.status %><% if (r.problem) { %><br><span class="muted"><%= r.problem %></span><% } %></td>
<td><% if (r.seen.length) { %><% r.seen.forEach(function (s) { %><code class="seen"><%= s %></code><br><% }) %><% } else { %><span class="muted">nothing</span><% } %></td></tr><% }) %>
</tbody></table>
<h2>Keys</h2>
<table><thead><tr><th>Selector</th><th>Algorithm</th><th>State</th></tr></thead><tbody>
<% it.domain.dkim.forEach(function (k) { %><tr><td><code><%= k.selector %></code></td><td><%= k.algorithm %></td><td><%= k.state %></td></tr><% }) %>
</tbody></table>`,
  },
  routes(router, ctx) {
    router.get('/domains', async (req, res) => {
      const [domains, accounts] = await Promise.all([listDomains(ctx.db, viewScope(res)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'domains', 'Domains', { domains, accounts });
    });
    router.post('/domains', async (req, res) => {
      const input = validate(domainInput, { account: numberField(req, 'account'), name: field(req, 'name') });
      const domain = await audit(req, res, 'console')(ctx.db, creation('domain', input.account), (db: Db) => addDomain(db, input));
      await ctx.redirect(req, res, `/admin/domains/${domain.id}`, `Domain ${domain.display_name} added: publish its records, then check it.`);
    });
    router.get('/domains/:id', async (req, res) => {
      const domain = await getDomain(ctx.db, validate(idParam, req.params.id));
      ctx.render(req, res, 'domain', `Domain ${domain.display_name}`, { domain });
    });
    router.post('/domains/:id/verify', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const commit = (work: (db: Db) => Promise<DomainView>) => audit(req, res, 'console')(ctx.db, domainChange('verify', id), work);
      const domain = await verifyDomain(ctx.db, id, { commit });
      await ctx.redirect(req, res, `/admin/domains/${domain.id}`, `Checked: ${domain.status}.`);
    });
    router.post('/domains/:id/rotate', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const domain = await audit(req, res, 'console')(ctx.db, domainChange('rotate', id), (db: Db) => rotateDomain(db, id));
      await ctx.redirect(req, res, `/admin/domains/${domain.id}`, 'New keys made: publish their two DKIM records; signing moves to them once DNS shows them.');
    });
    router.post('/domains/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, { ...domainChange('delete', id), after: undefined }, (db: Db) => removeDomain(db, id));
      await ctx.redirect(req, res, '/admin/domains', `Domain ${id} removed.`);
    });
  },
};
