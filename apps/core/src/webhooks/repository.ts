import { rawQuery, type Db, type Tx } from '../db';
import { idSpan } from '../ids';
import { wants } from '../events/repository';

/**
 * The SQL of webhooks: the dispatcher's fan-out of the event outbox into `webhook_jobs` (dispatch.ts) and the
 * deliverer's failing mark (deliver.ts).
 */

/** Whether any event waits: one look at the NULL end of the `(dispatched_at, created_at)` index (exported for its plan's test). */
export const PENDING_STATEMENT = 'SELECT EXISTS (SELECT 1 FROM events WHERE dispatched_at IS NULL) AS pending';

/** Reads whether any event is not yet dispatched (PENDING_STATEMENT). */
export async function eventsPending(db: Db): Promise<boolean> {
  const [waiting] = await rawQuery<{ pending: boolean }>(db, PENDING_STATEMENT, [], 'events-pending');
  return waiting?.pending ?? false;
}

/** Locks up to `limit` undispatched events, oldest first, skipping those another pass holds (in the caller's transaction). */
export async function claimUndispatched(tx: Tx, limit: number): Promise<{ id: string; account_id: number }[]> {
  return tx.$queryRaw<{ id: string; account_id: number }[]>`
        SELECT id::text AS id, account_id FROM events WHERE dispatched_at IS NULL
        ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
}

/**
 * Reads the (event, endpoint) pairs to deliver for the events: each enabled endpoint of the event's account subscribed
 * to its type. One statement whatever the number of endpoints; type filter and enabled flag in one place.
 */
export async function deliveriesFor(tx: Tx, eventIds: string[]): Promise<{ event_id: string; webhook_id: number }[]> {
  return rawQuery<{ event_id: string; webhook_id: number }>(
    tx,
    `SELECT e.id::text AS event_id, w.id AS webhook_id FROM events e
         JOIN webhooks w ON w.account_id = e.account_id
              AND CASE WHEN e.endpoint_id IS NULL THEN ${wants('w', 'e.type')} ELSE w.id = e.endpoint_id AND w.enabled END
         WHERE e.id = ANY($1::uuid[]) AND e.id BETWEEN $2::uuid AND $3::uuid`,
    [eventIds, ...idSpan(eventIds)],
  );
}

/** Inserts a webhook_jobs row per pair (those already there stay as they are). */
export async function insertWebhookJobs(tx: Tx, pairs: { event_id: string; webhook_id: number }[]): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO webhook_jobs (event_id, webhook_id) SELECT * FROM unnest($1::uuid[], $2::int[]) ON CONFLICT DO NOTHING`,
    [pairs.map((p) => p.event_id), pairs.map((p) => p.webhook_id)],
  );
}

/** Sets `dispatched_at` of the events to now. */
export async function markDispatched(tx: Tx, eventIds: string[]): Promise<void> {
  await rawQuery(tx, `UPDATE events SET dispatched_at = now() WHERE id = ANY($1::uuid[]) AND id BETWEEN $2::uuid AND $3::uuid`, [eventIds, ...idSpan(eventIds)]);
}

/**
 * Marks the endpoint failing since now (unless it already was) and disables it when it has been failing for
 * `disableAfterMs`, in one statement; returns whether it is still enabled (undefined when the endpoint is gone).
 */
export async function markWebhookFailing(db: Db, webhookId: number, disableAfterMs: number): Promise<boolean | undefined> {
  const [marked] = await db.$queryRaw<{ enabled: boolean }[]>`
    UPDATE webhooks SET failing_since = COALESCE(failing_since, now()), updated_at = now(),
      enabled = enabled AND COALESCE(failing_since, now()) > now() - ${disableAfterMs}::float8 * interval '1 millisecond',
      disabled_reason = CASE WHEN COALESCE(failing_since, now()) > now() - ${disableAfterMs}::float8 * interval '1 millisecond'
        THEN disabled_reason ELSE 'no successful delivery for 3 days' END
    WHERE id = ${webhookId} RETURNING enabled`;
  return marked?.enabled;
}
