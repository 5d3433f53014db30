import type { Message } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { emitProspectChange } from '../events/prospects';
import { isStopListed } from '../stop-list/rule';

/**
 * The last check before a sequence email goes out, run by the delivery processor inside the transaction that claims
 * the message: a reply, an outcome, a stop or a pause recorded after the step was written still stops it.
 * A step cancelled by a pause is rewound (the prospect goes back one step, due at once), so resuming sends it: never skipped.
 */
interface GuardRow {
  id: number;
  status: string;
  reason: string;
  step: number;
  email: string | null;
  site: string | null;
  account_id: number;
  campaign_status: string;
}

export async function sequenceRefusal(tx: Tx, message: Message): Promise<string | null> {
  if (message.prospectId === null) return 'the prospect was deleted';
  const [p] = await tx.$queryRaw<GuardRow[]>`
    SELECT p.id, p.status, p.reason, p.step, p.email, p.site, c.account_id, c.status AS campaign_status
    FROM prospects p JOIN campaigns c ON c.id = p.campaign_id
    WHERE p.id = ${message.prospectId} FOR UPDATE OF p`;
  if (!p) return 'the prospect was deleted';
  const lateButFine = p.status === 'lost' && p.reason === 'no_reply';
  if (p.status === 'later' && p.step === message.step) {
    // an out-of-office came in after this step was written: it goes out when the sequence resumes, never skipped
    await tx.$executeRaw`
      UPDATE prospects SET step = step - 1, updated_at = now(), thread_id = CASE WHEN step - 1 = 0 THEN NULL ELSE thread_id END
      WHERE id = ${p.id}`;
  }
  if (p.status !== 'writing' && !lateButFine) {
    return `the prospect is ${p.status}${p.reason ? ` (${p.reason})` : ''}`;
  }
  if (await isStopListed(tx, p.account_id, { email: p.email ?? message.to, site: p.site })) return 'the address is on the stop list';
  if (p.campaign_status !== 'running') {
    if (p.status === 'writing' && p.step === message.step) {
      await tx.$executeRaw`
        UPDATE prospects SET step = step - 1, next_at = now(), updated_at = now(),
          status = CASE WHEN step - 1 = 0 THEN 'ready'::"ProspectStatus" ELSE status END,
          thread_id = CASE WHEN step - 1 = 0 THEN NULL ELSE thread_id END
        WHERE id = ${p.id}`;
      if (p.step === 1) {
        // back to ready: the first step never went out
        const after = await tx.prospect.findUniqueOrThrow({ where: { id: p.id }, include: { campaign: true } });
        await emitProspectChange(tx, after.campaign, 'writing', after);
      }
    }
    return `the campaign is ${p.campaign_status}`;
  }
  return null;
}
