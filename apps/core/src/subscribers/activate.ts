import type { Prisma, Subscriber } from '../../../../generated/prisma/client';
import type { Tx } from '../db';
import type { ConsentContext, ConsentKind } from '../consent/repository';
import { recordActivation } from './repository';

/**
 * "A subscriber becomes active", written once: every path to active (an add of a new person who needs no
 * confirmation, a pending person added again as confirmed, the confirmation link, an import's line added as the API's
 * add would) goes through becomeActive, and the one-statement add (repository.ts FAST_ADD) runs the same SQL. The move
 * entails, in the transaction that makes it:
 * - the list's subscriber_count goes up, so the count is exact;
 * - the list's welcome series starts (once per person: docs/lists.md);
 * - the consent ledger gets its row (what the person agreed to, where: docs/preferences.md);
 * - `subscriber.confirmed` is written if an endpoint wants it (docs/webhooks.md).
 * An import's bulk lines are not this move: they bring an existing audience, recorded active without the series or
 * the event (docs/lists.md, imports/repository.ts).
 */
/** One person becoming active: who, on which list, and the consent ledger's row of it. */
export interface Activation {
  list: { id: number; key: string; accountId: number };
  subscriberId: number;
  email: string;
  now: Date;
  consent: { kind: ConsentKind; context: ConsentContext; detail: Record<string, unknown> };
  /** what else the same write sets on the row (an add's name, tags and fields) */
  data?: Prisma.SubscriberUpdateInput;
}

/** Makes the (locked) subscriber active with everything that entails (repository.ts becameActiveSql), in the caller's transaction. */
export async function becomeActive(tx: Tx, change: Activation): Promise<Subscriber> {
  const { list, subscriberId, email, now, consent } = change;
  const subscriber = await tx.subscriber.update({ where: { id: subscriberId }, data: { ...change.data, status: 'active', confirmedAt: now } });
  await recordActivation(tx, {
    id: subscriberId,
    listId: list.id,
    accountId: list.accountId,
    listKey: list.key,
    email,
    kind: consent.kind,
    source: consent.context.source,
    ip: consent.context.ip ?? '',
    formText: consent.context.formText ?? '',
    detail: { ...consent.detail, status: 'active' },
  });
  return subscriber;
}
