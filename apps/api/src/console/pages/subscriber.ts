import type { Router } from 'express';
import { consentExport, subscriberConsent } from '../../../../core/src/consent/ledger';
import { subscriberReach } from '../../../../core/src/subscribers/search';
import { idParam, validate } from '../../../../core/src/validate';
import type { PageContext } from '../page';

/**
 * One subscriber in the console (docs/preferences.md): what is held on them, their topic choices and pause, and their
 * consent ledger in order, with its export (the admin API's, consent/ledger.ts); the other lists the address is on and the
 * mail written to it. Reached from a list's subscribers and the search across lists (subscribers.ts).
 */
export const subscriberTemplates = {
  subscriber: `<p><a href="/admin/lists">All lists</a> · list <code><%= it.s.list %></code> · <a id="consent-export" href="/admin/subscribers/<%= it.s.id %>/consent.json" download>Export (JSON)</a></p>
<table><tbody>
<tr><th>Email</th><td><%= it.s.email %></td></tr>
<tr><th>Name</th><td><%= it.s.name %></td></tr>
<tr><th>Status</th><td><%= it.s.status %></td></tr>
<tr><th>Topics chosen</th><td id="topics"><%= it.topics %></td></tr>
<tr><th>Paused until</th><td><%= it.s.paused_until || '-' %></td></tr>
<tr><th>Consent (as given)</th><td><%= it.s.consent_source || '-' %> <%= it.s.consent_at || '' %></td></tr>
<tr><th>Tags</th><td><%= it.s.tags.join(', ') || '-' %></td></tr>
<tr><th>Fields</th><td><% Object.keys(it.s.fields || {}).forEach(function (k) { %><code><%= k %></code>: <%= it.s.fields[k] %><br><% }) %></td></tr>
<tr><th>Added</th><td><%= it.s.created_at %></td></tr>
</tbody></table>
<h2>Lists</h2>
<table id="subscriber-lists"><thead><tr><th>List</th><th>Status</th><th>Added</th></tr></thead><tbody>
<% it.reach.lists.forEach(function (l) { %><tr><td><a href="/admin/lists/<%= l.list_id %>"><%= l.list_name %></a><% if (l.id !== it.s.id) { %> · <a href="/admin/subscribers/<%= l.id %>">their row there</a><% } %></td><td><%= l.status %></td><td><%= l.created_at %></td></tr><% }) %>
</tbody></table>
<h2>Mail to this address</h2>
<% if (it.reach.mail.length) { %><table id="subscriber-mail"><thead><tr><th>When</th><th>Kind</th><th>Subject</th><th>Status</th><th>Opened</th></tr></thead><tbody>
<% it.reach.mail.forEach(function (m) { %><tr><td><%= m.created_at %></td><td><%= m.kind %></td><td><a href="/admin/messages/<%= m.id %>"><%= m.subject %></a></td><td><%= m.status %></td><td><%= m.opened ? 'yes' : '-' %></td></tr><% }) %>
</tbody></table><% } else { %><p class="muted">Nothing written to it yet (the last 20 are shown).</p><% } %>
<h2>Consent ledger</h2>
<% if (it.consent.length) { %><table id="consent"><thead><tr><th>When</th><th>What</th><th>Source</th><th>IP</th><th>Details</th><th>Text shown</th></tr></thead><tbody>
<% it.consent.forEach(function (c) { %><tr><td><%= c.at %></td><td><%= c.kind %></td><td><%= c.source %></td><td><%= c.ip || '-' %></td><td><code><%= JSON.stringify(c.detail) %></code></td><td><%= c.form_text || '-' %></td></tr><% }) %>
</tbody></table><% } else { %><p class="muted">Nothing recorded (the person came before the ledger).</p><% } %>`,
};

export function subscriberRoutes(router: Router, ctx: PageContext): void {
  router.get('/subscribers/:id', async (req, res) => {
    const id = validate(idParam, req.params.id);
    const [{ subscriber, consent }, reach] = await Promise.all([subscriberConsent(ctx.db, id), subscriberReach(ctx.reads.db, id)]);
    const chosen = Object.entries((subscriber.topics ?? {}) as Record<string, boolean>);
    const topics = chosen.length ? chosen.map(([id, on]) => `${id}: ${on ? 'in' : 'out'}`).join(', ') : 'the topics\u2019 defaults';
    ctx.render(req, res, 'subscriber', `Subscriber ${subscriber.email}`, { s: subscriber, consent, topics, reach });
  });
  router.get('/subscribers/:id/consent.json', async (req, res) => {
    const id = validate(idParam, req.params.id);
    const body = await consentExport(ctx.db, id);
    res.set({ 'Content-Disposition': `attachment; filename="subscriber-${id}-consent.json"`, 'Cache-Control': 'no-store' });
    res.json(body);
  });
}
