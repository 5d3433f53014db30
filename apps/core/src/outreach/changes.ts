import type { Campaign, Prisma, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';
import { countReply } from '../analytics/repository';
import { emitEvents, type PendingEvent } from '../events';
import { prospectView } from './view';

/**
 * Writes to prospects that may move their status, each with its events in the same transaction (docs/webhooks.md:
 * every status change, service-made or caller-made, is a `prospect.state_changed` with `previous`).
 */
type CampaignRef = Pick<Campaign, 'id' | 'accountId' | 'stages'>;

/** The events of one prospect's change (none when its status did not move); see emitProspectChange. */
export function prospectChangeEvents(campaign: CampaignRef, previous: ProspectStatus, prospect: Prospect): PendingEvent[] {
  if (previous === prospect.status) return [];
  const data = { ...prospectView(prospect, campaign), campaign: campaign.id, previous };
  const events: PendingEvent[] = [{ accountId: campaign.accountId, type: 'prospect.state_changed', data }];
  if (prospect.status === 'replied') events.push({ accountId: campaign.accountId, type: 'prospect.replied', data });
  return events;
}

/**
 * The events of one prospect's change, whoever made it (the caller, the sequence, inbound mail, the link check):
 * `prospect.state_changed` when the status moved (data: the Prospect of docs/api.md, its campaign and `previous`), and
 * `prospect.replied` too when it moved to replied (and the campaign's `replied` counter). Call it in the transaction
 * that wrote `prospect`'s new row.
 */
export async function emitProspectChange(tx: Tx, campaign: CampaignRef, previous: ProspectStatus, prospect: Prospect): Promise<void> {
  await emitEvents(tx, prospectChangeEvents(campaign, previous, prospect));
  if (prospect.status === 'replied' && previous !== 'replied') await countReply(tx, campaign.id);
}

/** One prospect whose status was `previous` (the caller holds its row lock). */
export async function updateProspect(tx: Tx, campaign: CampaignRef, previous: ProspectStatus, id: number, data: Prisma.ProspectUncheckedUpdateInput): Promise<Prospect> {
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
