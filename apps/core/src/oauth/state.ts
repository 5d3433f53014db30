import { afterCommit } from '../after-commit';
import type { Db } from '../db';
import { reconcileDeliveries } from '../delivery/reconcile';
import { emitEvent } from '../events';
import { logger } from '../logger';

/**
 * A mailbox the provider no longer lets in (docs/mailboxes.md): `needs_reconnect` and its `mailbox.disconnected` event,
 * in one transaction, once. Only while the refresh token refused is still the stored one: a reconnect that stored a new
 * one in the meantime wins.
 */
export async function markNeedsReconnect(db: Db, mailboxId: number, refusedTokenEnc: string, reason: string): Promise<boolean> {
  const marked = await db.$transaction(async (tx) => {
    const at = new Date();
    const changed = await tx.mailbox.updateMany({
      where: { id: mailboxId, authStatus: 'active', oauthRefreshTokenEnc: refusedTokenEnc },
      data: { authStatus: 'needs_reconnect', disconnectedAt: at, disconnectReason: reason.slice(0, 500) },
    });
    if (!changed.count) return false;
    const m = await tx.mailbox.findUniqueOrThrow({ where: { id: mailboxId } });
    await emitEvent(tx, m.accountId, 'mailbox.disconnected', {
      mailbox: { id: m.id, address: m.address, provider: m.oauthProvider },
      reason: m.disconnectReason,
      disconnected_at: at.toISOString(),
    });
    return true;
  });
  if (marked) logger.warn({ mailbox: mailboxId, reason }, 'oauth: the provider refused the refresh token; the mailbox needs reconnecting, its mail waits');
  return marked;
}

/**
 * After a reconnect: the mailbox's waiting emails (queued or deferred, held while it was disconnected) go back to the
 * delivery queue, through the reconciler, which gives each row one job whatever ran before; the claim sends each once.
 * Its due outreach steps are claimed again by the scheduler's next tick.
 */
export async function releaseWaiting(db: Db, mailboxId: number): Promise<number> {
  const { count } = await db.message.updateMany({ where: { mailboxId, status: { in: ['queued', 'deferred'] } }, data: { enqueuedAt: null } });
  // the reconciler reads committed rows
  if (count) await afterCommit(db, (committed) => reconcileDeliveries(committed));
  return count;
}
