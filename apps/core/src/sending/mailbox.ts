import type { Mailbox } from '../../../../generated/prisma/client';
import type { Tx } from '../db';

/** How long a key's mailbox is taken from memory before it is read again. */
const TTL_MS = 10_000;

/**
 * The key's mailbox for accepting a send (its address for the `from` rule and the Message-ID, its display name),
 * cached briefly per process: it is read on every send and changes rarely. Delivery always reloads the row. An API
 * process makes one (createApp) and passes it down.
 */
export class MailboxCache {
  private readonly cache = new Map<number, { mailbox: Mailbox; until: number }>();

  async sendingMailbox(db: Tx, id: number): Promise<Mailbox> {
    const hit = this.cache.get(id);
    if (hit && hit.until > Date.now()) return hit.mailbox;
    const mailbox = await db.mailbox.findUniqueOrThrow({ where: { id } });
    this.cache.set(id, { mailbox, until: Date.now() + TTL_MS });
    return mailbox;
  }
}
