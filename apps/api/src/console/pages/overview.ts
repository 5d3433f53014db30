import { EXACT_COUNT_CAP, liveMessageCounts, messageCountsByStatus, queueDepths } from '../../../../core/src/metrics';
import { partitionStates } from '../../../../core/src/partitions';
import { readNote } from '../../../../core/src/replicas';
import { dbId, Joi, validate } from '../../../../core/src/validate';
import { Forbidden } from '../../../../core/src/errors';
import { viewScope, type ConsolePage } from '../page';
import { accountCharts, overviewCharts } from '../stats-section';

const personQuery = Joi.object({ account: dbId() }).unknown(true);

export const overviewPage: ConsolePage = {
  path: '/',
  title: 'Overview',
  templates: {
    // a person's overview (docs/teams.md): one of their accounts' charts; the whole service's queues, counts and
    // partitions are the operator's
    'overview-person': `<% if (it.accounts.length > 1) { %><p>Account: <% it.accounts.forEach(function (a) { %><a href="/admin?account=<%= a.id %>"<% if (a.id === it.account) { %> aria-current="page"<% } %>><%= a.name %></a> <% }) %></p><% } %>
<%~ it.charts %>
<p class="muted">The queues, the counts of every account and the time partitions are shown to the operator.</p>`,
    overview: `<% if (it.readNote) { %><p class="muted" id="read-note">Charts: <%= it.readNote %></p><% } %>
<%~ it.charts %>
<h2>Queues</h2>
<table><thead><tr><th>Queue</th><th>Waiting</th><th>Active</th><th>Delayed</th><th>Failed</th><th>Completed</th></tr></thead><tbody>
<% it.queues.forEach(function (q) { %><tr><td><%= q.queue %></td><td><%= q.counts.waiting %></td><td><%= q.counts.active %></td><td><%= q.counts.delayed %></td><td><%= q.counts.failed %></td><td><%= q.counts.completed %></td></tr><% }) %>
</tbody></table>
<p><a href="/admin/queues">Open the queue dashboard</a></p>
<h2>Messages on their way</h2>
<table><tbody><% it.live.forEach(function (m) { %><tr><th><%= m.status %></th><td><%= m.count %></td></tr><% }) %></tbody></table>
<h2>Messages by status <span class="muted">(<%= it.byStatus.exact ? 'exact' : "over " + it.cap + " messages: Postgres's estimate, as of its last ANALYZE" %>)</span></h2>
<% if (it.byStatus.counts.length) { %><table id="by-status"><tbody><% it.byStatus.counts.forEach(function (m) { %><tr><th><%= m.status %></th><td><%= m.count %></td></tr><% }) %></tbody></table>
<% } else { %><p class="muted"><%= it.byStatus.exact ? 'No messages yet.' : 'No statistics yet.' %></p><% } %>
<p><a href="/admin/messages?status=failed">Failed messages</a> · <a href="/admin/messages?status=bounced">Bounced messages</a></p>
<h2>Time partitions</h2>
<table id="partitions"><thead><tr><th>Table</th><th>Partitions</th><th>Oldest kept from</th><th>Rows no partition holds</th></tr></thead><tbody>
<% it.partitions.forEach(function (p) { %><tr><td><%= p.table %></td><td><%= p.partitions %></td><td><%= p.oldest %></td><td><%= p.strays %></td></tr><% }) %>
</tbody></table>`,
  },
  routes(router, ctx) {
    router.get('/', async (req, res) => {
      const scope = viewScope(res);
      if (scope) {
        const accounts = await ctx.db.account.findMany({ where: { id: { in: typeof scope === 'number' ? [scope] : [...scope] } }, select: { id: true, name: true }, orderBy: { id: 'asc' } });
        const { account: asked } = validate<{ account?: number }>(personQuery, req.query);
        const shown = asked === undefined ? accounts[0] : accounts.find((a) => a.id === asked);
        if (!shown && asked !== undefined) throw new Forbidden(`needs read in account ${asked}`);
        const charts = shown ? await accountCharts(ctx.reads.db, shown, req.query) : '<p class="muted">You have no account yet.</p>';
        return ctx.render(req, res, 'overview-person', 'Overview', { accounts, account: shown?.id, charts });
      }
      const [queues, live, byStatus, charts, states, note] = await Promise.all([
        queueDepths(),
        liveMessageCounts(ctx.db),
        messageCountsByStatus(ctx.db),
        overviewCharts(ctx.reads.db, req.query),
        partitionStates(ctx.db),
        readNote(ctx.reads),
      ]);
      // the default partition's rows: ids no range holds (docs/partitions.md)
      const partitions = states.map((p) => ({ ...p, oldest: p.oldestFromMs === null ? '' : new Date(p.oldestFromMs).toISOString().slice(0, 10) }));
      ctx.render(req, res, 'overview', 'Overview', { queues, live, byStatus, cap: EXACT_COUNT_CAP.toLocaleString('en'), charts, partitions, readNote: note });
    });
  },
};
