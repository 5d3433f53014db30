import type { Request, Router } from 'express';
import { mailboxChange as mailboxChangeRules } from '../../../../core/src/mailboxes/schema';
import { campaignChanges } from '../../../../core/src/outreach/schema';
import { changeCampaign } from '../../../../core/src/outreach/campaigns';
import { updateMailbox } from '../../../../core/src/mailbox-settings';
import { idParam, validate } from '../../../../core/src/validate';
import { CSRF_FIELD, mailboxSelect } from '../views';
import { field, type PageContext } from '../page';
import { campaignChange, mailboxChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import type { Db } from '../../../../core/src/db';

/**
 * The console's part of docs/outreach.md, kept apart from the pages it sits in: a campaign's sending window,
 * auto-pause and opt-out (with the reason of an auto-pause) and its numbers (GET /admin/api/campaigns/:id/stats), and
 * a mailbox's pacing and warm-up. Every form goes through the admin API's schemas and services.
 */

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** On the campaign page: the settings and their form. `it.campaign` is a CampaignDetail. */
export const CAMPAIGN_DELIVERABILITY = `<h2>Sending</h2>
<% if (it.campaign.paused_reason) { %><p class="error">Paused by the service: <%= it.campaign.paused_reason %>. Resuming starts a new window.</p><% } %>
<table><tbody>
<tr><th>Window</th><td><% if (it.campaign.schedule) { %><%= it.campaign.schedule.days.map(function (d) { return ${JSON.stringify(DAYS)}[d - 1]; }).join(' ') %> <%= it.campaign.schedule.from %>-<%= it.campaign.schedule.to %> (<%= it.campaign.schedule.timezone %>; a prospect's fields.timezone wins)<% } else { %>any time<% } %></td></tr>
<tr><th>Auto-pause</th><td><% if (it.campaign.pause_on) { %>bounces over <%= it.campaign.pause_on.bounce_rate === null ? 'never' : it.campaign.pause_on.bounce_rate %>, complaints over <%= it.campaign.pause_on.complaint_rate === null ? 'never' : it.campaign.pause_on.complaint_rate %>, over the last <%= it.campaign.pause_on.window %> emails<% } else { %>off<% } %></td></tr>
<tr><th>One-click opt-out</th><td><%= it.campaign.unsubscribe ? 'on' : 'off' %></td></tr>
</tbody></table>
<form method="post" action="/admin/campaigns/<%= it.campaign.id %>/sending" class="card">${CSRF_FIELD}
<label>Time zone <input name="timezone" placeholder="Europe/Berlin" value="<%= it.campaign.schedule ? it.campaign.schedule.timezone : '' %>"></label>
<label>Days (1 = Monday ... 7 = Sunday) <input name="days" placeholder="1,2,3,4,5" value="<%= it.campaign.schedule ? it.campaign.schedule.days.join(',') : '' %>"></label>
<label>From <input name="from" placeholder="09:00" value="<%= it.campaign.schedule ? it.campaign.schedule.from : '' %>"></label>
<label>To <input name="to" placeholder="17:00" value="<%= it.campaign.schedule ? it.campaign.schedule.to : '' %>"></label>
<p>Leave the time zone empty to send at any time.</p>
<label>Pause at bounce rate <input name="bounce_rate" value="<%= it.campaign.pause_on && it.campaign.pause_on.bounce_rate !== null ? it.campaign.pause_on.bounce_rate : '' %>"></label>
<label>Pause at complaint rate <input name="complaint_rate" value="<%= it.campaign.pause_on && it.campaign.pause_on.complaint_rate !== null ? it.campaign.pause_on.complaint_rate : '' %>"></label>
<label>Over the last (emails) <input name="window" value="<%= it.campaign.pause_on ? it.campaign.pause_on.window : '' %>"></label>
<p>Leave the window empty to never pause; a rate left empty is not watched.</p>
<label><input type="checkbox" name="unsubscribe" value="on"<%= it.campaign.unsubscribe ? ' checked' : '' %>> One-click opt-out link and List-Unsubscribe headers</label>
<button>Save sending settings</button>
</form>`;

/** On the campaign page: its numbers. `it.stats` is a CampaignStats. */
export const CAMPAIGN_STATS = `<h2>Numbers</h2>
<p>Reply rate <strong><%= (it.stats.rates.reply * 100).toFixed(1) %>%</strong> · bounce rate <strong><%= (it.stats.rates.bounce * 100).toFixed(1) %>%</strong> · complaint rate <strong><%= (it.stats.rates.complaint * 100).toFixed(2) %>%</strong></p>
<table class="stats-steps"><thead><tr><th>Step</th><th>Sent</th><th>Bounced</th><th>Replied</th><th>Auto-replied</th><th>Unsubscribed</th></tr></thead><tbody>
<% it.stats.steps.forEach(function (s) { %><tr><td><%= s.step %></td><td><%= s.sent %></td><td><%= s.bounced %></td><td><%= s.replied %></td><td><%= s.auto_replied %></td><td><%= s.unsubscribed %></td></tr><% }) %>
</tbody></table>
<table class="stats-days"><thead><tr><th>Day (UTC)</th><th>Sent</th><th>Replied</th><th>Bounced</th></tr></thead><tbody>
<% it.stats.days.filter(function (d) { return d.sent || d.replied || d.bounced; }).reverse().forEach(function (d) { %><tr><td><%= d.date %></td><td><%= d.sent %></td><td><%= d.replied %></td><td><%= d.bounced %></td></tr><% }) %>
</tbody></table>`;

/** On the mailboxes page: pacing and warm-up of one mailbox. */
export const MAILBOX_PACING = `<form method="post" action="/admin/mailboxes/pacing" class="card">${CSRF_FIELD}
<h2>Pacing and warm-up</h2>
${mailboxSelect('Mailbox')}
<label>Gap jitter (0 to 1) <input name="gap_jitter" placeholder="0.3"></label>
<label>Warm-up: start (emails on day 0) <input name="warmup_start" type="number" min="0"></label>
<label>Warm-up: more each day <input name="warmup_step" type="number" min="0"></label>
<label><input type="checkbox" name="warmup_off" value="on"> No warm-up</label>
<button>Save pacing</button>
</form>`;

/** A number typed in a form as given ('' = not given), for joi to judge. */
const typed = (req: Request, name: string): string | number | undefined => {
  const value = field(req, name);
  if (!value) return undefined;
  return Number.isFinite(Number(value)) ? Number(value) : value;
};

/** The sending form as the admin API's PATCH body. */
function sendingChanges(req: Request) {
  const timezone = field(req, 'timezone');
  const days = field(req, 'days');
  const window = typed(req, 'window');
  return {
    schedule: timezone
      ? { timezone, days: days ? days.split(/[\s,]+/).filter(Boolean).map((d) => (Number.isFinite(Number(d)) ? Number(d) : d)) : [], from: field(req, 'from'), to: field(req, 'to') }
      : null,
    pause_on: window === undefined ? null : { bounce_rate: typed(req, 'bounce_rate') ?? null, complaint_rate: typed(req, 'complaint_rate') ?? null, window },
    unsubscribe: field(req, 'unsubscribe') === 'on',
  };
}

export function campaignSendingRoutes(router: Router, ctx: PageContext): void {
  router.post('/campaigns/:id/sending', async (req, res) => {
    const id = validate(idParam, req.params.id);
    const changes = validate(campaignChanges, sendingChanges(req));
    const campaign = await audit(req, res, 'console')(ctx.db, campaignChange(id), (db: Db) => changeCampaign(db, id, changes));
    await ctx.redirect(req, res, `/admin/campaigns/${id}`, `Sending settings of "${campaign.name}" saved.`);
  });
}

export function mailboxPacingRoutes(router: Router, ctx: PageContext): void {
  router.post('/mailboxes/pacing', async (req, res) => {
    const id = validate(idParam, typed(req, 'mailbox'));
    const start = typed(req, 'warmup_start');
    const change = {
      ...(typed(req, 'gap_jitter') !== undefined ? { gap_jitter: typed(req, 'gap_jitter') } : {}),
      ...(field(req, 'warmup_off') === 'on' ? { warmup: null } : start !== undefined ? { warmup: { start, step: typed(req, 'warmup_step') ?? 0 } } : {}),
    };
    const input = validate(mailboxChangeRules, change);
    const mailbox = await audit(req, res, 'console')(ctx.db, mailboxChange(id), (db: Db) => updateMailbox(db, id, input));
    await ctx.redirect(req, res, '/admin/mailboxes', `Pacing of ${mailbox.address} saved: jitter ${mailbox.gap_jitter}, today's cap ${mailbox.effective_daily_limit}.`);
  });
}
