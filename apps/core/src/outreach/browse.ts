import { accountWhere, type AccountScope } from '../account-scope';
import type { Tx } from '../db';
import { campaignView, type CampaignView } from './campaigns';

/** Campaigns of every account (or of the scope's), with their prospect counts. */
export async function browseCampaigns(db: Tx, account?: AccountScope): Promise<(CampaignView & { account: number })[]> {
  const campaigns = await db.campaign.findMany({ where: accountWhere(account), orderBy: { id: 'asc' }, include: { _count: { select: { prospects: true } } } });
  return campaigns.map((c) => ({ account: c.accountId, ...campaignView(c, c._count.prospects) }));
}

/** A campaign's prospects counted by status and stage. */
export async function prospectCounts(db: Tx, campaignId: number): Promise<{ status: string; stage: number; count: number }[]> {
  const groups = await db.prospect.groupBy({ by: ['status', 'stage'], where: { campaignId }, _count: { _all: true }, orderBy: [{ status: 'asc' }, { stage: 'asc' }] });
  return groups.map((g) => ({ status: g.status, stage: g.stage, count: g._count._all }));
}
