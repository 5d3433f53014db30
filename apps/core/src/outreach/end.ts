import type { Campaign, Prisma, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';
import { updateProspect, updateProspects } from './changes';
import { lockOpenProspectsAt } from './repository/prospects';

/**
 * "A prospect's sequence ends", written once (docs/outreach.md): it closes as lost, with its reason (no_reply, stopped,
 * bounced, complained, unsubscribed, step_removed, or the caller's), or as won (`agreed`); no step is due any more
 * (next_at null, so neither the scheduler nor a step job already queued writes to it: steps.ts re-checks the status);
 * it keeps the moment it closed (`closed_at`; a prospect closed already keeps its first); and its
 * `prospect.state_changed` event is written in the same transaction (changes.ts). Every path that ends one (the step
 * writer, the caller's outcome or stop, the opt-out link, a step removed from the campaign, an address suppressed by a
 * bounce or a complaint: endProspectsAt) goes through endSequence or endSequences; an add of a stop-listed contact writes its new row closed with `ending`.
 */
export type Ending = { status: 'lost'; reason: string } | { status: 'agreed' };

/** The columns that end a sequence `how` at `now` (`closedSince`: when it closed already, kept). */
export function ending(how: Ending, now: Date, closedSince: Date | null = null) {
  return { status: how.status, reason: how.status === 'lost' ? how.reason : '', nextAt: null, closedAt: closedSince ?? now };
}

type CampaignRef = Pick<Campaign, 'id' | 'accountId' | 'stages'>;

/** Ends one prospect whose status was `previous` (the caller holds its row lock); `also`: columns changed with it. */
export function endSequence(tx: Tx, campaign: CampaignRef, previous: ProspectStatus, id: number, how: Ending, now: Date, also: Prisma.ProspectUncheckedUpdateInput = {}): Promise<Prospect> {
  return updateProspect(tx, campaign, previous, id, { ...also, ...ending(how, now) });
}

/** Ends every prospect matching `where` (which names the statuses it ends from), with their events in one statement. */
export function endSequences(tx: Tx, where: Prisma.ProspectWhereInput, how: Ending, now: Date, closedSince: Date | null = null): Promise<number> {
  return updateProspects(tx, where, ending(how, now, closedSince));
}

/**
 * The outreach part of an address suppressed (suppressions/suppress.ts): every prospect of the account at `address`
 * still open, or closed only as no_reply, ends lost for `reason` (a bounce's with `reply` `bounce`: docs/inbound.md).
 */
export async function endProspectsAt(tx: Tx, accountId: number, address: string, reason: 'bounced' | 'complained', now: Date): Promise<void> {
  for (const { id } of await lockOpenProspectsAt(tx, accountId, address)) {
    const before = await tx.prospect.findUniqueOrThrow({ where: { id }, include: { campaign: { select: { id: true, accountId: true, stages: true } } } });
    await endSequence(tx, before.campaign, before.status, id, { status: 'lost', reason }, now, { reply: reason === 'bounced' ? 'bounce' : before.reply });
  }
}
