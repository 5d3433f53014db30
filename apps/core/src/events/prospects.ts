import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';
import { prospectView } from '../outreach/prospects';
import { emitEvents, type PendingEvent } from './index';
import { countReply } from '../analytics/counters';

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
 * `prospect.replied` too when it moved to replied (and the campaign's `replied` counter). Call it in the transaction that wrote `prospect`'s new row.
 */
export async function emitProspectChange(tx: Tx, campaign: CampaignRef, previous: ProspectStatus, prospect: Prospect): Promise<void> {
  await emitEvents(tx, prospectChangeEvents(campaign, previous, prospect));
  if (prospect.status === 'replied' && previous !== 'replied') await countReply(tx, campaign.id);
}
