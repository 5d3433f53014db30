import { validate } from '../../../../core/src/validate';
import { subscriberSearch } from '../../../../core/src/subscribers/schema';
import { searchSubscribers, subscriberQuery } from '../../../../core/src/subscribers/search';
import { formQuery, type ConsolePage } from '../page';

/**
 * Subscribers across every list (docs/operator.md): find a person by part of their address, a custom field
 * (`plan=pro`) or a tag (`tag:vip`); each row links to the subscriber's page (their lists, topics, mail and consent).
 */
export const subscribersPage: ConsolePage = {
  path: '/subscribers',
  title: 'Subscribers',
  templates: {
    subscribers: `<form method="get" action="/admin/subscribers" class="card search" role="search">
<label>Find <input name="q" value="<%= it.q %>" size="36" placeholder="ada@ · plan=pro · tag:vip" aria-describedby="subscriber-search-help"></label>
<button>Find</button>
<p class="muted" id="subscriber-search-help">Part of an address, a custom field as <code>name=value</code>, or a tag as <code>tag:name</code>, across every list.</p>
</form>
<% if (it.q) { %><table id="subscribers"><thead><tr><th>Address</th><th>Name</th><th>List</th><th>Account</th><th>Status</th><th>Tags</th><th>Added</th></tr></thead><tbody>
<% it.page.rows.forEach(function (s) { %><tr><td><a href="/admin/subscribers/<%= s.id %>"><%= s.email %></a></td><td><%= s.name %></td><td><a href="/admin/lists/<%= s.list.id %>"><%= s.list.name %></a></td><td><%= s.list.account %></td><td><%= s.status %></td><td><%= s.tags.join(', ') %></td><td><%= s.created_at %></td></tr><% }) %>
</tbody></table>
<% if (!it.page.rows.length) { %><p class="muted">Nobody matches.</p><% } %>
<% if (it.page.next) { %><p><a rel="next" href="/admin/subscribers?q=<%= encodeURIComponent(it.q) %>&amp;before=<%= it.page.next %>">More</a></p><% } %><% } %>`,
  },
  routes(router, ctx) {
    router.get('/subscribers', async (req, res) => {
      const { q, before } = validate<{ q?: string; before?: number }>(subscriberSearch, formQuery(req));
      const page = q ? await searchSubscribers(ctx.reads.db, subscriberQuery(q), { before, limit: 50 }) : null;
      ctx.render(req, res, 'subscribers', 'Subscribers', { q: q ?? '', page });
    });
  },
};
