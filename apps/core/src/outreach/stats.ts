import { PROSPECT_STATUSES } from './view';
import type { Tx } from '../db';
import { NotFound } from '../errors';
import { branchStats, type NodeStats, type TestStats } from './branch-stats';
import { campaignStepCount, dailyCounts, mailboxCounts, prospectStatusCounts, stepCounts, writtenCount, type StepCounts } from './repository/stats';

/**
 * GET /admin/api/campaigns/:id/stats (docs/outreach.md): how a campaign does, read from its rows in four statements.
 * - prospects: how many are in each status (every status named, 0 included);
 * - steps: per step, the emails that went out (`sent`: taken by the receiving server, bounced later or not), the dead-address
 *   bounces, and the prospects whose last step it was when they replied, auto-replied or unsubscribed;
 * - rates: replies over prospects written to; dead bounces and complaints over the emails that ended;
 * - days: the last `days` UTC days (oldest first, 0 included): emails sent, replies, dead bounces (on the day they ended);
 * - mailboxes: per mailbox of its rotation (docs/campaigns.md), the emails it sent and the prospects it started.
 */
export interface CampaignStats {
  prospects: Record<string, number>;
  steps: { step: number; sent: number; bounced: number; replied: number; auto_replied: number; unsubscribed: number }[];
  rates: { reply: number; bounce: number; complaint: number };
  days: { date: string; sent: number; replied: number; bounced: number }[];
  mailboxes: { mailbox: number; address: string; sent: number; prospects: number }[];
  /** the sequence as a tree with counts per step, and its A/B tests (branch-stats.ts) */
  tree: { nodes: NodeStats[]; ended: number };
  tests: TestStats[];
}

const share = (part: number, whole: number) => (whole ? Math.round((part / whole) * 10_000) / 10_000 : 0);

export async function campaignStats(db: Tx, campaignId: number, options: { days?: number; now?: Date } = {}): Promise<CampaignStats> {
  const days = options.days ?? 30;
  const now = options.now ?? new Date();
  const steps = await campaignStepCount(db, campaignId);
  if (steps === undefined) throw new NotFound(`no campaign with id ${campaignId}`);

  const prospects = Object.fromEntries(PROSPECT_STATUSES.map((s) => [s, 0]));
  for (const row of await prospectStatusCounts(db, campaignId)) prospects[row.status] = row.count;

  // emails per step, and the prospects whose last step it is, by how they answered
  const perStep = await stepCounts(db, campaignId, steps);
  const total = (key: keyof StepCounts) => perStep.reduce((sum, s) => sum + s[key], 0);
  const written = await writtenCount(db, campaignId);
  const daily = await dailyCounts(db, campaignId, now, days);
  const branches = await branchStats(db, campaignId, now);

  return {
    prospects,
    steps: perStep.map(({ step, sent, bounced, replied, auto_replied, unsubscribed }) => ({ step, sent, bounced, replied, auto_replied, unsubscribed })),
    rates: { reply: share(total('replied'), written), bounce: share(total('bounced'), total('ended')), complaint: share(total('complained'), total('ended')) },
    days: daily,
    mailboxes: await mailboxCounts(db, campaignId),
    tree: { nodes: branches.nodes, ended: branches.ended },
    tests: branches.tests,
  };
}
