import type { Message } from '../../../../generated/prisma/client';
import type { MessageKind } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';

/**
 * Checks the delivery processor runs just before a message goes out, inside the transaction that claims it.
 * A guard returns null to let the message go, or a reason: the message is then marked `cancelled` with that reason
 * and never sent (for example a sequence step whose prospect replied after the step was queued).
 */
export type PreSendGuard = (tx: Tx, message: Message) => Promise<string | null>;

const guards = new Map<MessageKind, PreSendGuard>();

export function registerPreSendGuard(kind: MessageKind, guard: PreSendGuard): void {
  guards.set(kind, guard);
}

export async function preSendRefusal(tx: Tx, message: Message): Promise<string | null> {
  const guard = guards.get(message.kind);
  return guard ? guard(tx, message) : null;
}

/** The kinds a guard watches: their claim must run the guard inside the transaction that takes the row. */
export function guardedKinds(): MessageKind[] {
  return [...guards.keys()];
}
