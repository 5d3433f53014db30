import type { Message } from '../../../../generated/prisma/client';
import type { MessageKind } from '../../../../generated/prisma/enums';
import type { Tx } from '../db';

/**
 * Checks the delivery processor runs just before a message goes out, inside the transaction that claims it.
 * A guard returns null to let the message go, or a reason: the message is then marked `cancelled` with that reason
 * and never sent (for example a sequence step whose prospect replied after the step was queued).
 */
export type PreSendGuard = (tx: Tx, message: Message) => Promise<string | null>;

/**
 * The guards of a worker, by message kind: each kind registers its own (kinds.ts's EmailKind.guard), and the process's
 * EmailKinds, made once at start, holds them; never filled as a side effect.
 */
export type PreSendGuards = Readonly<Partial<Record<MessageKind, PreSendGuard>>>;

export async function preSendRefusal(guards: PreSendGuards, tx: Tx, message: Message): Promise<string | null> {
  const guard = guards[message.kind];
  return guard ? guard(tx, message) : null;
}

/** The kinds a guard watches: their claim must run the guard inside the transaction that takes the row. */
export function guardedKinds(guards: PreSendGuards): MessageKind[] {
  return Object.keys(guards) as MessageKind[];
}
