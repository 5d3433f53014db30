import type { Mailbox, Message, Send } from '../../../../generated/prisma/client';
import { rawQuery, type Db } from '../db';
import { guardedKinds } from './guards';

/** snake_case row JSON (row_to_json) to the client's camelCase model, timestamps as Dates. */
function fromRow<T>(row: Record<string, unknown> | null): T | null {
  if (!row) return null;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    const name = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    out[name] = typeof value === 'string' && /(At|Day|Until|Before)$/.test(name) ? new Date(value) : value;
  }
  return out as T;
}

/**
 * The claim of a message no pre-send guard watches (transactional copies), as one statement: take the row if it is
 * due and nobody holds it, and read its mailbox and Send with it. Returns null when the row is not claimable this way
 * (guarded kind, final, held, early, suppressed, missing): the caller's full claim then decides what to answer.
 */
export async function claimUnguarded(db: Db, messageId: string, leaseMs: number): Promise<(Message & { mailbox: Mailbox; send: Send | null }) | null> {
  const [row] = await rawQuery<{ message: Record<string, unknown>; mailbox: Record<string, unknown>; send: Record<string, unknown> | null }>(
    db,
    `WITH claimed AS (
       UPDATE messages SET status = 'sending', locked_until = now() + $2 * interval '1 millisecond', attempts = attempts + 1, updated_at = now()
       WHERE id = $1::uuid AND kind::text <> ALL($3::text[])
         AND (status IN ('queued', 'deferred') OR (status = 'sending' AND locked_until < now()))
         AND (not_before IS NULL OR not_before <= now())
         AND NOT EXISTS (SELECT 1 FROM suppressions s WHERE s.account_id = messages.account_id AND s.email = messages."to")
       RETURNING *
     )
     SELECT row_to_json(c) AS message, row_to_json(mb) AS mailbox, row_to_json(s) AS send
     FROM claimed c JOIN mailboxes mb ON mb.id = c.mailbox_id LEFT JOIN sends s ON s.id = c.send_id`,
    [messageId, leaseMs, guardedKinds()],
  );
  if (!row) return null;
  return { ...fromRow<Message>(row.message)!, mailbox: fromRow<Mailbox>(row.mailbox)!, send: fromRow<Send>(row.send) };
}

/** The row is delivered; only the worker holding it may say so. */
export async function markSent(db: Db, messageId: string, response: string): Promise<void> {
  await rawQuery(
    db,
    `UPDATE messages SET status = 'sent', sent_at = now(), smtp_response = $2, last_error = NULL, locked_until = NULL, updated_at = now()
     WHERE id = $1::uuid AND status = 'sending'`,
    [messageId, response],
  );
}
