import type { Message } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import { emitProspectChange } from './changes';
import { lockProspectForGuard, rewindStep, rewindStepDueNow } from './repository/prospects';
import { isStopListed } from '../stop-list/repository';

/**
 * The last check before a sequence email goes out, run by the delivery processor inside the transaction that claims
 * the message: a reply, an outcome, a stop or a pause recorded after the step was written still stops it.
 * A step cancelled by a pause is rewound (the prospect goes back one step, due at once), so resuming sends it: never skipped.
 */
export async function sequenceRefusal(tx: Tx, message: Message): Promise<string | null> {
  if (message.prospectId === null) return 'the prospect was deleted';
  const p = await lockProspectForGuard(tx, message.prospectId);
  if (!p) return 'the prospect was deleted';
  const lateButFine = p.status === 'lost' && p.reason === 'no_reply';
  if (p.status === 'later' && p.step === message.step) {
    // an out-of-office came in after this step was written: it goes out when the sequence resumes, never skipped
    await rewindStep(tx, p.id);
  }
  if (p.status !== 'writing' && !lateButFine) {
    return `the prospect is ${p.status}${p.reason ? ` (${p.reason})` : ''}`;
  }
  if (await isStopListed(tx, p.account_id, { email: p.email ?? message.to, site: p.site })) return 'the address is on the stop list';
  if (p.campaign_status !== 'running') {
    if (p.status === 'writing' && p.step === message.step) {
      await rewindStepDueNow(tx, p.id);
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
