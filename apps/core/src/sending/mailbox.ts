import type { Mailbox } from '../../../../generated/prisma/client';
import type { Tx } from '../db';

/**
 * The key's mailbox for accepting a send (its address for the `from` rule and the Message-ID, its display name),
 * cached briefly per process: it is read on every send and changes rarely. Delivery always reloads the row.
 */
const TTL_MS = 10_000;
const cache = new Map<number, { mailbox: Mailbox; until: number }>();

export async function sendingMailbox(db: Tx, id: number): Promise<Mailbox> {
  const hit = cache.get(id);
  if (hit && hit.until > Date.now()) return hit.mailbox;
  const mailbox = await db.mailbox.findUniqueOrThrow({ where: { id } });
  cache.set(id, { mailbox, until: Date.now() + TTL_MS });
  return mailbox;
}
