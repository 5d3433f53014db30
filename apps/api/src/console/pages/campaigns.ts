import { campaignChanges, campaignInput } from '../../../../core/src/outreach/schema';
import { listAccounts } from '../../../../core/src/accounts';
import { browseCampaigns, prospectCounts } from '../../../../core/src/outreach/browse';
import { changeCampaign, createCampaign, getCampaign, GOALS } from '../../../../core/src/outreach/campaigns';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { idParam, validate } from '../../../../core/src/validate';
import { ACCOUNT_SELECT, CSRF_FIELD, mailboxSelect } from '../views';
import { viewScope, field, numberField, query, type ConsolePage } from '../page';
import { browseProspects, PROSPECT_STATUSES } from '../../../../core/src/operator/prospects';
import { campaignStats } from '../../../../core/src/outreach/stats';
import { CAMPAIGN_DELIVERABILITY, CAMPAIGN_STATS, campaignSendingRoutes } from './outreach-settings';
import { campaignCharts } from '../stats-section';
import { CAMPAIGN_TREE, sequenceTree } from './campaign-tree';
import { formRows, typedNumber } from '../editors';
import { blankRows, inEditorTerms, NEW_CAMPAIGN_STEPS, STEP_CHOICES, stepRows, STEPS_EDITOR, stepsOfForm } from '../step-form';
import { listTemplates } from '../../../../core/src/templates/service';
import { campaignChange, creation } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import type { Db } from '../../../../core/src/db';

export const campaignsPage: ConsolePage = {
  path: '/campaigns',
  title: 'Campaigns',
  templates: {
    campaigns: `<table><thead><tr><th>Id</th><th>Account</th><th>Name</th><th>Goal</th><th>Status</th><th>Prospects</th><th></th></tr></thead><tbody>
<% it.campaigns.forEach(function (c) { %><tr><td><%= c.id %></td><td><%= c.account %></td><td><a href="/admin/campaigns/<%= c.id %>"><%= c.name %></a></td><td><%= c.goal %></td><td><%= c.status %></td><td><%= c.prospects %></td>
<td><form method="post" action="/admin/campaigns/<%= c.id %>/status" class="inline">${CSRF_FIELD}<% if (c.status === 'running') { %><input type="hidden" name="status" value="paused"><button>Pause</button><% } else { %><input type="hidden" name="status" value="running"><button><%= c.status === 'paused' ? 'Resume' : 'Start' %></button><% } %></form></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/campaigns" class="card" id="new-campaign">${CSRF_FIELD}
<h2>New campaign</h2>
${ACCOUNT_SELECT}
<label>Name <input name="name" required maxlength="200"></label>
<label>Goal <select name="goal"><% it.goals.forEach(function (g) { %><option><%= g %></option><% }) %></select></label>
${mailboxSelect('Mailbox')}
${NEW_CAMPAIGN_STEPS}
<button>Create campaign</button>
</form>`,
    campaign: `<p><a href="/admin/campaigns">All campaigns</a> · <%= it.campaign.goal %> · <strong><%= it.campaign.status %></strong> · <%= it.campaign.prospects %> prospects</p>
<form method="post" action="/admin/campaigns/<%= it.campaign.id %>/status" class="inline">${CSRF_FIELD}<input type="hidden" name="status" value="<%= it.campaign.status === 'running' ? 'paused' : 'running' %>"><button><%= it.campaign.status === 'running' ? 'Pause' : it.campaign.status === 'paused' ? 'Resume' : 'Start' %></button></form>
<h2>Steps</h2>
<table><thead><tr><th>#</th><th>After (hours)</th><th>Subject</th><th>Body</th></tr></thead><tbody>
<% it.campaign.steps.forEach(function (s, i) { %><tr><td><%= s.id || i + 1 %></td><td><%= s.type === 'condition' ? 'if ' + s.if + ' within ' + s.within_hours + ' h: ' + s.then + ' / ' + s.else : s.delay_hours %></td><td><%= s.subject || (s.variants ? s.variants.length + ' variants' : (s.template ? '(template ' + s.template + ')' : '')) %></td><td><%= s.body || '' %></td></tr><% }) %>
</tbody></table>
${STEPS_EDITOR}
${CAMPAIGN_TREE}
<h2>Prospects by status and stage</h2>
<table><thead><tr><th>Status</th><th>Stage</th><th>Prospects</th></tr></thead><tbody>
<% it.counts.forEach(function (c) { %><tr><td><%= c.status %></td><td><%= it.campaign.stages[c.stage] || c.stage %></td><td><%= c.count %></td></tr><% }) %>
</tbody></table>
<section id="prospects"><h2>Prospects</h2>
<form method="get" action="/admin/campaigns/<%= it.campaign.id %>#prospects" class="card search">
<label>Status <select name="status"><option value="">any</option><% it.prospectStatuses.forEach(function (s) { %><option<% if (s === it.pf.status) { %> selected<% } %>><%= s %></option><% }) %></select></label>
<label>Step <input type="number" name="step" min="0" value="<%= it.pf.step %>" size="4"></label>
<button>Filter</button></form>
<table class="prospects"><thead><tr><th>Id</th><th>Email</th><th>Site</th><th>Name</th><th>Status</th><th>Step</th><th>Next step at</th><th>Last answer</th><th>Changed</th><th>Verified</th></tr></thead><tbody>
<% it.prospects.rows.forEach(function (p) { %><tr><td><%= p.id %></td><td><%= p.email || '' %></td><td><%= p.site || '' %></td><td><%= p.name %></td><td><%= p.status %><% if (p.reason) { %> (<%= p.reason %>)<% } %></td><td><%= p.step %></td><td><%= p.next_at || '-' %></td><td><% if (p.last_answer) { %><%= p.last_answer %> <span class="muted">(<%= p.replied_at %>)</span><% } else { %>-<% } %></td><td><%= p.updated_at %></td><td><% if (p.verification) { %><span class="verification <%= p.verification.result %>"><%= p.verification.result %></span> <span class="muted">(<%= p.verification.checked_at %>)</span><% } else { %>-<% } %></td></tr><% }) %>
</tbody></table>
<% if (!it.prospects.rows.length) { %><p class="muted">No prospects<% if (it.pf.status || it.pf.step !== '') { %> match<% } %>.</p><% } %>
<% if (it.prospects.next) { %><p><a rel="next" href="/admin/campaigns/<%= it.campaign.id %>?status=<%= encodeURIComponent(it.pf.status) %>&amp;step=<%= encodeURIComponent(it.pf.step) %>&amp;before=<%= it.prospects.next %>#prospects">Older prospects</a></p><% } %>
</section>
${CAMPAIGN_STATS}
<h2>Mailboxes</h2>
<table class="stats-mailboxes"><thead><tr><th>Mailbox</th><th>In rotation</th><th>Prospects started</th><th>Sent</th></tr></thead><tbody>
<% it.stats.mailboxes.forEach(function (m) { %><tr><td><%= m.address %> (<%= m.mailbox %>)</td><td><%= it.campaign.mailboxes.indexOf(m.mailbox) >= 0 ? 'yes' : 'taken out: finishing its prospects' %></td><td><%= m.prospects %></td><td><%= m.sent %></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/campaigns/<%= it.campaign.id %>/mailboxes" class="card" id="rotation">${CSRF_FIELD}
<h3>Rotation</h3>
<p class="muted">New prospects go to the ticked mailboxes of the account in turn, in the order of their positions; a mailbox taken out finishes the prospects it started.</p>
<table class="rotation"><thead><tr><th>In rotation</th><th>Position</th><th>Mailbox</th></tr></thead><tbody>
<% it.rotation.forEach(function (m, i) { %><tr><td><input type="hidden" name="box<%= i %>.mailbox" value="<%= m.id %>"><input type="checkbox" id="rotation-<%= m.id %>" name="box<%= i %>.use" value="yes"<% if (m.used) { %> checked<% } %>></td>
<td><input type="number" name="box<%= i %>.position" value="<%= i + 1 %>" min="1" max="999" class="position" aria-label="Position of <%= m.address %>"></td>
<td><label for="rotation-<%= m.id %>"><%= m.address %> (<%= m.id %>)</label></td></tr><% }) %>
</tbody></table>
<button>Save mailboxes</button>
</form>
${CAMPAIGN_DELIVERABILITY}
<%~ it.charts %>`,
  },
  routes(router, ctx) {
    router.get('/campaigns', async (req, res) => {
      const scope = viewScope(res);
      const [campaigns, accounts, mailboxes, templates] = await Promise.all([browseCampaigns(ctx.db, scope), listAccounts(ctx.db, scope), listMailboxes(ctx.db, scope), listTemplates(ctx.db, scope, 'template')]);
      ctx.render(req, res, 'campaigns', 'Campaigns', { campaigns, accounts, mailboxes, goals: GOALS, templates, stepRows: stepRows([], blankRows(query(req, 'blank'))), ...STEP_CHOICES });
    });
    router.post('/campaigns', async (req, res) => {
      // the form's steps as the admin API's, checked by its schema: a refusal names the step as the form shows it
      const campaign = await inEditorTerms(() => {
        const input = validate(campaignInput, { account: numberField(req, 'account'), name: field(req, 'name'), goal: field(req, 'goal'), mailbox: numberField(req, 'mailbox'), steps: stepsOfForm(req) });
        return audit(req, res, 'console')(ctx.db, creation('campaign', input.account), (db: Db) => createCampaign(db, input));
      });
      await ctx.redirect(req, res, '/admin/campaigns', `Campaign ${campaign.id} "${campaign.name}" created (${campaign.status}).`);
    });
    router.post('/campaigns/:id/status', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const changes = validate(campaignChanges, { status: field(req, 'status') });
      const campaign = await audit(req, res, 'console')(ctx.db, campaignChange(id), (db: Db) => changeCampaign(db, id, changes));
      await ctx.redirect(req, res, '/admin/campaigns', `Campaign ${campaign.id} "${campaign.name}" is ${campaign.status}.`);
    });
    router.get('/campaigns/:id', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const campaign = await getCampaign(ctx.db, id);
      const filter = { status: query(req, 'status'), step: query(req, 'step'), before: query(req, 'before') };
      const [counts, stats, charts, prospects, mailboxes, templates] = await Promise.all([
        prospectCounts(ctx.db, id),
        campaignStats(ctx.db, id),
        campaignCharts(ctx.db, id, req.query),
        browseProspects(ctx.db, id, filter),
        listMailboxes(ctx.db, campaign.account),
        listTemplates(ctx.db, campaign.account, 'template'),
      ]);
      const used = (m: { id: number }) => campaign.mailboxes.indexOf(m.id);
      const rotation = [...mailboxes.filter((m) => used(m) >= 0).sort((a, b) => used(a) - used(b)), ...mailboxes.filter((m) => used(m) < 0)].map((m) => ({ id: m.id, address: m.address, used: used(m) >= 0 }));
      ctx.render(req, res, 'campaign', `Campaign ${campaign.name}`, { campaign, counts, stats, tree: sequenceTree(stats.tree.nodes), charts, prospects, pf: filter, prospectStatuses: PROSPECT_STATUSES, rotation, templates, stepRows: stepRows(campaign.steps, blankRows(query(req, 'blank'))), ...STEP_CHOICES });
    });
    router.post('/campaigns/:id/mailboxes', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const mailboxes = formRows(req, 'box').filter((row) => row.use === 'yes').map((row) => typedNumber(row.mailbox));
      const changes = validate(campaignChanges, { mailboxes });
      const campaign = await audit(req, res, 'console')(ctx.db, campaignChange(id), (db: Db) => changeCampaign(db, id, changes));
      await ctx.redirect(req, res, `/admin/campaigns/${id}`, `Mailboxes of "${campaign.name}" saved: ${campaign.mailboxes.join(', ')}.`);
    });
    // the steps editor: its rows as the admin API's `steps`, checked by the same schema, refused in the editor's words
    router.post('/campaigns/:id/steps', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const campaign = await inEditorTerms(() => {
        const changes = validate(campaignChanges, { steps: stepsOfForm(req) });
        return audit(req, res, 'console')(ctx.db, campaignChange(id), (db: Db) => changeCampaign(db, id, changes));
      });
      await ctx.redirect(req, res, `/admin/campaigns/${id}#steps`, `Steps of "${campaign.name}" saved: ${campaign.steps.length}.`);
    });
    campaignSendingRoutes(router, ctx);
  },
};
