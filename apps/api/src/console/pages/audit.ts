import type { Request } from 'express';
import type { AccountScope } from '../../../../core/src/account-scope';
import { listAudit } from '../../../../core/src/audit';
import { auditQuery } from '../../../../core/src/audit/schema';
import { can } from '../../../../core/src/teams';
import { validate } from '../../../../core/src/validate';
import { query, type ConsolePage } from '../page';

/** The console's audit log (docs/teams.md): newest first, filtered by account, actor, action and resource. */
export const auditPage: ConsolePage = {
  path: '/audit',
  title: 'Audit log',
  permission: 'audit.read',
  templates: {
    audit: `<form method="get" action="/admin/audit" class="card search">
<label>Account <input name="account" value="<%= it.filter.account || '' %>" size="6"></label>
<label>Actor <input name="actor" value="<%= it.filter.actor || '' %>"></label>
<label>Action <input name="action" value="<%= it.filter.action || '' %>" size="12"></label>
<label>Resource <input name="resource" value="<%= it.filter.resource || '' %>" size="10"></label>
<button>Filter</button>
</form>
<table id="audit"><thead><tr><th>Id</th><th>At</th><th>Actor</th><th>Via</th><th>Action</th><th>Resource</th><th>Account</th><th>Before</th><th>After</th><th>IP</th><th>Request</th></tr></thead><tbody>
<% it.entries.forEach(function (e) { %><tr><td><%= e.id %></td><td><%= e.at %></td><td><%= e.actor.label %></td><td><%= e.via %></td><td><%= e.action %></td><td><%= e.resource %> <%= e.resource_id || '' %></td><td><%= e.account || '' %></td>
<td><code><%= e.before ? JSON.stringify(e.before) : '' %></code></td><td><code><%= e.after ? JSON.stringify(e.after) : '' %></code></td><td><%= e.ip || '' %></td><td><%= e.request_id || '' %></td></tr><% }) %>
</tbody></table>
<% if (it.next) { %><p><a href="<%= it.older %>">Older entries</a></p><% } %>`,
  },
  routes(router, ctx) {
    router.get('/audit', async (req: Request, res) => {
      const user = res.locals.session?.user;
      const given = { account: query(req, 'account') || undefined, actor: query(req, 'actor') || undefined, action: query(req, 'action') || undefined, resource: query(req, 'resource') || undefined, before: query(req, 'before') || undefined };
      const filter = validate(auditQuery, given);
      // a person who is not an operator sees the log of the accounts they may read it in (or of the one named of those)
      let scope: AccountScope = filter.account;
      if (user && !user.operator) {
        const mine = [...user.roles.keys()].filter((a) => can(user, 'audit.read', a));
        scope = filter.account !== undefined && mine.includes(filter.account) ? filter.account : mine;
      }
      const { entries, next } = await listAudit(ctx.db, { ...filter, account: scope, before: filter.before ?? Number.MAX_SAFE_INTEGER, limit: 50 });
      const older = next ? `/admin/audit?${new URLSearchParams({ ...Object.fromEntries(Object.entries(given).filter(([k, v]) => v !== undefined && k !== 'before')), before: String(next) } as Record<string, string>)}` : null;
      ctx.render(req, res, 'audit', 'Audit log', { entries, next, older, filter: { ...given, account: typeof scope === 'number' ? scope : '' } });
    });
  },
};
