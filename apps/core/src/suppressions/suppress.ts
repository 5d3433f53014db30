import type { Tx } from '../db';
import { endProspectsAt } from '../outreach/end';
import { suppressSubscriptions } from '../subscribers/machine';

/**
 * "An address is suppressed" (a dead bounce, at delivery or by a report; mailbox failures past the limit; a
 * complaint), written once, in the caller's transaction:
 * - the address goes on the account's suppression list (an address on it already keeps its first entry);
 * - its pending and active subscriptions in every list of the account move to `reason`, the counts kept exact, each
 *   with its consent ledger row (subscribers/machine.ts suppressSubscriptions);
 * - its open prospects in every campaign of the account end lost for `reason` (outreach/end.ts endProspectsAt).
 * Every path that suppresses (inbound/bounce-policy.ts applyBounce, inbound/handle.ts for a complaint) calls this.
 */
export async function suppressAddress(tx: Tx, accountId: number, email: string, reason: 'bounced' | 'complained', detail = '', bounceReason: string | null = null, now = new Date()): Promise<void> {
  const address = email.trim().toLowerCase();
  await tx.suppression.upsert({
    where: { accountId_email: { accountId, email: address } },
    create: { accountId, email: address, reason, detail, bounceReason },
    update: {},
  });
  await suppressSubscriptions(tx, accountId, address, reason, detail);
  await endProspectsAt(tx, accountId, address, reason, now);
}
