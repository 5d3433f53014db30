import { broadcastTotals } from '../../../core/src/analytics/stats';
import { broadcastLinks } from '../../../core/src/analytics/tracking';
import type { Db } from '../../../core/src/db';
import { chartRange, broadcastLastMinute, broadcastLive, overviewRange, readBuckets, RANGES, type ChartRange, type RangeName } from '../../../core/src/operator/ranges';
import { esc, funnelChart, lineChart, type ChartSeries, type LineSeries } from './charts';

/**
 * The charts section of the console's pages (docs/analytics.md): a range of counters (30 days unless asked; the
 * overview's own default when the service is new) for the whole service, a mailbox, a campaign or a broadcast, and a
 * broadcast's funnel. Each page puts the returned HTML in as it is
 * (`<%~ it.charts %>`): it is built from numbers and escaped text only (charts.ts).
 */
const EMAILS: ChartSeries[] = [
  { key: 'sent', label: 'Sent' },
  { key: 'delivered', label: 'Delivered' },
];
const TROUBLE: ChartSeries[] = [
  { key: 'bounced_dead', label: 'Bounced (dead)' },
  { key: 'bounced_other', label: 'Bounced (other)' },
  { key: 'complained', label: 'Complaints' },
  { key: 'unsubscribed', label: 'Unsubscribes' },
];
const ENGAGEMENT: ChartSeries[] = [
  { key: 'clicked', label: 'Clicks' },
  { key: 'opened', label: 'Opens' },
];

/** The hourly view's series (messages of each hour and what became of them): replies, complaints and unsubscribes are counted by the day only. */
const HOURLY_EMAILS: LineSeries[] = [
  { key: 'accepted', label: 'Accepted' },
  { key: 'delivered', label: 'Delivered' },
];
const HOURLY_TROUBLE: LineSeries[] = [
  { key: 'bounced_dead', label: 'Bounced (dead)' },
  { key: 'bounced_other', label: 'Bounced (other)' },
  { key: 'failed', label: 'Failed' },
];

/** The range picker: a GET form back to the page, the range kept in its address (so it can be shared). */
function rangeForm(path: string, range: ChartRange, hidden: Record<string, number> = {}): string {
  const options = RANGES.map((r) => `<option value="${r}"${r === range.name ? ' selected' : ''}>${esc(RANGE_LABELS[r])}</option>`).join('');
  const kept = Object.entries(hidden).map(([name, value]) => `<input type="hidden" name="${esc(name)}" value="${value}">`).join('');
  return `<form method="get" action="${esc(path)}#charts" class="card range">${kept}<label>Range <select name="range">${options}</select></label>
<label>From <input type="date" name="from" value="${esc(range.fromDay)}"></label> <label>To <input type="date" name="to" value="${esc(range.toDay)}"></label>
<button>Show</button> <span class="muted">(From and To apply to a custom range; under three days the charts are hourly)</span></form>`;
}

const RANGE_LABELS: Record<(typeof RANGES)[number], string> = { '24h': 'Last 24 hours', '168h': 'Last 7 days, by the hour', '7d': 'Last 7 days', '30d': 'Last 30 days', '90d': 'Last 90 days', custom: 'Custom (from, to)' };

/** A share as a figure: `97.3 %`, or a dash when nothing was counted under it. */
const share = (part: number, whole: number) => (whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : '-');

/**
 * The range's key rates as figures above the charts: delivered and bounced of what was sent (accepted, by the hour),
 * complaints and opens of what was delivered (complaints are counted by the day only; opens only where tracked).
 */
function rateFigures(buckets: { values: Record<string, number> }[], hourly: boolean): string {
  const total = (key: string) => buckets.reduce((sum, b) => sum + (b.values[key] ?? 0), 0);
  const sent = total(hourly ? 'accepted' : 'sent');
  const delivered = total('delivered');
  const figures: [string, string, string][] = [
    ['delivered', 'Delivered', `${share(delivered, sent)}`],
    ['bounced', 'Bounced', share(total('bounced_dead') + total('bounced_other'), sent)],
    ['complained', 'Complained', hourly ? 'by the day only' : share(total('complained'), delivered)],
    ['opened', 'Opened', share(total('opened'), delivered)],
  ];
  const items = figures.map(([key, label, value]) => `<div class="rate" id="rate-${key}"><dt>${label}</dt><dd>${esc(value)}</dd></div>`).join('');
  return `<dl class="rates">${items}<div class="rate"><dt>${hourly ? 'Accepted' : 'Sent'}</dt><dd>${sent.toLocaleString('en')}</dd></div></dl>`;
}

async function rangeCharts(db: Db, filter: Record<string, number>, what: string, extra: ChartSeries[], path: string, query: unknown, fallback?: RangeName, hidden?: Record<string, number>): Promise<string> {
  const range = chartRange(query, new Date(), fallback);
  const buckets = await readBuckets(db, filter, range);
  const unit = range.unit === 'hour' ? 'Hour (UTC)' : 'Day';
  const head = `<section class="charts" id="charts"><h2>${esc(range.caption)} <span class="muted">(${esc(buckets[0]?.at ?? '')} to ${esc(buckets.at(-1)?.at ?? '')}, UTC, ${range.unit === 'hour' ? 'by the hour' : 'by the day'})</span></h2>`;
  const section = [head, rateFigures(buckets, range.unit === 'hour'), rangeForm(path, range, hidden)];
  if (range.unit === 'hour') {
    section.push(lineChart(`Emails accepted and delivered, ${what}`, buckets, HOURLY_EMAILS, unit));
    section.push(lineChart(`Bounces and failures, ${what}`, buckets, HOURLY_TROUBLE, unit));
    const engagement = extra.filter((s) => s.key === 'clicked' || s.key === 'opened');
    if (engagement.length) section.push(lineChart(`${engagement.map((s) => s.label).join(', ')}, ${what}`, buckets, engagement, unit));
  } else {
    section.push(lineChart(`Emails sent and delivered, ${what}`, buckets, EMAILS, unit));
    section.push(lineChart(`Bounces, complaints and unsubscribes, ${what}`, buckets, TROUBLE, unit));
    if (extra.length) section.push(lineChart(`${extra.map((s) => s.label).join(', ')}, ${what}`, buckets, extra, unit));
  }
  section.push('</section>');
  return section.join('\n');
}

/** The whole service's charts: with no range asked, the overview's own default (operator/ranges.ts overviewRange). */
export const overviewCharts = async (db: Db, query?: unknown) => {
  const asked = typeof (query as { range?: unknown } | undefined)?.range === 'string';
  return rangeCharts(db, {}, 'all accounts', ENGAGEMENT, '/admin', query, asked ? undefined : await overviewRange(db));
};
/** One account's charts on the overview of a person (docs/teams.md): the range form keeps the account. */
export const accountCharts = (db: Db, account: { id: number; name: string }, query?: unknown) =>
  rangeCharts(db, { account: account.id }, account.name, ENGAGEMENT, '/admin', query, undefined, { account: account.id });
export const mailboxCharts = (db: Db, mailbox: number, query?: unknown) =>
  rangeCharts(db, { mailbox }, 'this mailbox', [...ENGAGEMENT, { key: 'replied', label: 'Replies' }], `/admin/mailboxes/${mailbox}`, query);
export const campaignCharts = (db: Db, campaign: number, query?: unknown) =>
  rangeCharts(db, { campaign }, 'this campaign', [{ key: 'replied', label: 'Replies' }, { key: 'clicked', label: 'Clicks' }], `/admin/campaigns/${campaign}`, query);

const LIVE: LineSeries[] = [
  { key: 'delivered', label: 'Delivered' },
  { key: 'bounced', label: 'Bounced' },
  { key: 'failed', label: 'Failed' },
  { key: 'opened', label: 'Opens' },
];

/** A running broadcast's last 30 minutes, minute by minute; the page reloads itself while the broadcast sends. */
export async function broadcastLiveSection(db: Db, id: number): Promise<string> {
  const [minutes, rate] = await Promise.all([broadcastLive(db, id, 30), broadcastLastMinute(db, id)]);
  const total = (key: string) => minutes.reduce((sum, m) => sum + (m.values[key] ?? 0), 0);
  return `<section class="charts" id="live"><h2>Live: the last 30 minutes <span class="muted">(by the minute, UTC; this page reloads every 10 seconds)</span></h2>
<p><strong id="rate">${rate}</strong> copies delivered in the last minute · ${total('delivered')} delivered, ${total('bounced')} bounced, ${total('opened')} opened in 30 minutes</p>
${lineChart('This broadcast, minute by minute', minutes, LIVE, 'Minute (UTC)')}</section>`;
}

/** A broadcast's funnel over its whole life, then its last 30 days. */
export async function broadcastCharts(db: Db, id: number, query?: unknown): Promise<string> {
  const broadcast = await db.broadcast.findUniqueOrThrow({ where: { id }, select: { id: true, accountId: true, audience: true } });
  const totals = await broadcastTotals(db, broadcast.accountId, broadcast.id);
  const funnel = funnelChart('The funnel of this broadcast', [
    { label: 'Audience', value: broadcast.audience },
    { label: 'Sent', value: totals.sent },
    { label: 'Delivered', value: totals.delivered },
    { label: 'Bounced', value: totals.bounced_dead + totals.bounced_other },
    { label: 'Unsubscribed', value: totals.unsubscribed },
    { label: 'Clicked', value: totals.clicked },
    { label: 'Opened', value: totals.opened },
  ]);
  const [days, links] = await Promise.all([rangeCharts(db, { broadcast: broadcast.id }, 'this broadcast', ENGAGEMENT, `/admin/broadcasts/${broadcast.id}`, query), broadcastLinks(db, broadcast.id)]);
  const rows = links.map((l) => `<tr><td>${esc(l.url)}</td><td>${l.unique_clicks}</td><td>${l.clicks}</td><td>${l.scanner_clicks}</td></tr>`).join('');
  const table = links.length
    ? `<section id="links"><h2>Clicks per link</h2><table><thead><tr><th>Link</th><th>Unique clicks</th><th>Clicks</th><th>Scanners (not counted)</th></tr></thead><tbody>${rows}</tbody></table></section>`
    : '';
  return `<section class="charts" id="funnel"><h2>Funnel</h2>${funnel}</section>\n${table}\n${days}`;
}
