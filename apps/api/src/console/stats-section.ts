import { broadcastTotals, readStats } from '../../../core/src/analytics/stats';
import { broadcastLinks } from '../../../core/src/analytics/tracking';
import type { Db } from '../../../core/src/db';
import { dailyChart, esc, funnelChart, type ChartSeries } from './charts';

/**
 * The charts section of the console's pages (docs/analytics.md): the last 30 days of counters for the whole service,
 * a mailbox, a campaign or a broadcast, and a broadcast's funnel. Each page puts the returned HTML in as it is
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

async function last30Days(db: Db, filter: Record<string, number>, what: string, extra: ChartSeries[]): Promise<string> {
  const { from, to, days } = await readStats(db, filter);
  const section = [
    `<section class="charts" id="charts"><h2>The last 30 days <span class="muted">(${from} to ${to}, UTC)</span></h2>`,
    dailyChart(`Emails sent and delivered, ${what}`, days, EMAILS),
    dailyChart(`Bounces, complaints and unsubscribes, ${what}`, days, TROUBLE),
  ];
  if (extra.length) section.push(dailyChart(`${extra.map((s) => s.label).join(', ')}, ${what}`, days, extra));
  section.push('</section>');
  return section.join('\n');
}

export const overviewCharts = (db: Db) => last30Days(db, {}, 'all accounts', ENGAGEMENT);
export const mailboxCharts = (db: Db, mailbox: number) => last30Days(db, { mailbox }, 'this mailbox', [...ENGAGEMENT, { key: 'replied', label: 'Replies' }]);
export const campaignCharts = (db: Db, campaign: number) => last30Days(db, { campaign }, 'this campaign', [{ key: 'replied', label: 'Replies' }, { key: 'clicked', label: 'Clicks' }]);

/** A broadcast's funnel over its whole life, then its last 30 days. */
export async function broadcastCharts(db: Db, id: number): Promise<string> {
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
  const [days, links] = await Promise.all([last30Days(db, { broadcast: broadcast.id }, 'this broadcast', ENGAGEMENT), broadcastLinks(db, broadcast.id)]);
  const rows = links.map((l) => `<tr><td>${esc(l.url)}</td><td>${l.unique_clicks}</td><td>${l.clicks}</td><td>${l.scanner_clicks}</td></tr>`).join('');
  const table = links.length
    ? `<section id="links"><h2>Clicks per link</h2><table><thead><tr><th>Link</th><th>Unique clicks</th><th>Clicks</th><th>Scanners (not counted)</th></tr></thead><tbody>${rows}</tbody></table></section>`
    : '';
  return `<section class="charts" id="funnel"><h2>Funnel</h2>${funnel}</section>\n${table}\n${days}`;
}
