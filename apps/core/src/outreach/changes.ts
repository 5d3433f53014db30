import type { Campaign, Prisma, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';
import { countReply } from '../analytics/counters';
import { emitEvents } from '../events';
import { emitProspectChange, prospectChangeEvents } from '../events/prospects';

/**
 * Writes to prospects that may move their status, each with its events in the same transaction (docs/webhooks.md:
 * every status change, service-made or caller-made, is a `prospect.state_changed` with `previous`).
 */
type CampaignRef = Pick<Campaign, 'id' | 'accountId' | 'stages'>;

/** One prospect whose status was `previous` (the caller holds its row lock). */
export async function updateProspect(tx: Tx, campaign: CampaignRef, previous: ProspectStatus, id: number, data: Prisma.ProspectUpdateInput): Promise<Prospect> {
  const after = await tx.prospect.update({ where: { id }, data });
  await emitProspectChange(tx, campaign, previous, after);
  return after;
}

/** Every prospect matching `where` (which should name the statuses it moves from); the events go in one statement. */
export async function updateProspects(tx: Tx, where: Prisma.ProspectWhereInput, data: Prisma.ProspectUpdateManyMutationInput): Promise<number> {
  const before = await tx.prospect.findMany({ where, select: { id: true, status: true, campaign: { select: { id: true, accountId: true, stages: true } } } });
  if (!before.length) return 0;
  const ids = before.map((p) => p.id);
  const { count } = await tx.prospect.updateMany({ where: { AND: [where, { id: { in: ids } }] }, data });
  const after = new Map((await tx.prospect.findMany({ where: { id: { in: ids } } })).map((p) => [p.id, p]));
  await emitEvents(tx, before.flatMap((p) => (after.has(p.id) ? prospectChangeEvents(p.campaign, p.status, after.get(p.id)!) : [])));
  for (const p of before) if (p.status !== 'replied' && after.get(p.id)?.status === 'replied') await countReply(tx, p.campaign.id);
  return count;
}
