import { JOB_OPTIONS } from '../queues';
import { TemporaryDeliveryError, type Delivery, type DeliveryOutcome } from './delivery';
import { sendClaimed } from './deliver';
import { guardedKinds } from './guards';
import { deliveryLeaseMs } from './lease';
import { addDeliveryJobs } from './outbox';

/** The wait before a delivery's first retry (the backoff of JOB_OPTIONS.delivery). */
function firstRetryDelayMs(): number {
  const backoff = JOB_OPTIONS.delivery.backoff;
  return typeof backoff === 'object' && backoff.delay ? backoff.delay : 10_000;
}

/**
 * Delivers a batch of rows in one job (the API's `dispatch` jobs), without a queue job per row: the due rows are
 * claimed a slice at a time (in the statements the worker's claims share: fast-claim.ts) and go out concurrently over
 * their mailboxes' pools. Every other row gets its own delivery job, which decides and retries exactly as for any
 * row: one not due yet (delayed to `send_at`), one the quick claim leaves alone (a guarded kind, held, suppressed,
 * already final), and one that failed for now (after the first retry's wait; it has the usual attempts still ahead).
 */
export async function deliverBatch(delivery: Delivery, rows: { id: string; notBefore: Date | null }[]): Promise<{ sent: number; handedOn: number }> {
  const skip = guardedKinds(delivery.kinds.guards);
  const slots = delivery.rows;
  const now = Date.now();
  const due: typeof rows = [];
  const handOn: typeof rows = [];
  for (const row of rows) (!row.notBefore || row.notBefore.getTime() <= now ? due : handOn).push(row);
  const retryAt = new Date(now + firstRetryDelayMs());
  const sends: Promise<DeliveryOutcome | null>[] = [];
  const sendSlice = async (slice: typeof rows) => {
    await slots.acquire(slice.length);
    // each row with the claims of the worker's other jobs and single deliveries: one statement for all of them
    const claims = await Promise.allSettled(slice.map((r) => delivery.claims.claimUnguarded(r.id, deliveryLeaseMs(), skip)));
    let failure: { reason: unknown } | undefined;
    claims.forEach((claimed, j) => {
      const message = claimed.status === 'fulfilled' ? claimed.value : null;
      if (message) {
        // the slot is the email in memory and on the wire: free once the SMTP conversation is over
        const sending = sendClaimed(delivery, message, { lastAttempt: false, afterWire: () => slots.release() }).then(
          (outcome) => {
            // its mailbox's provider is away: the row gets a job of its own for when it may be asked again
            if (outcome.kind === 'early') handOn.push({ id: message.id, notBefore: outcome.until });
            return outcome;
          },
          (err: unknown) => {
            if (!(err instanceof TemporaryDeliveryError)) throw err;
            handOn.push({ id: message.id, notBefore: retryAt });
            return null;
          },
        );
        sends.push(sending);
        return;
      }
      slots.release();
      // a claim Postgres did not answer: the row is as it was, and the job's next run claims it again
      if (claimed.status === 'rejected') failure ??= claimed;
      else handOn.push(slice[j]!);
    });
    if (failure) throw failure.reason;
  };
  const errors: unknown[] = [];
  try {
    for (let i = 0; i < due.length; i += slots.capacity) await sendSlice(due.slice(i, i + slots.capacity));
  } catch (err) {
    errors.push(err);
  }
  // whatever happened, the rows in flight finish and the rows handed on get their jobs before the job reports
  const settled = await Promise.allSettled(sends);
  await addDeliveryJobs(handOn);
  // anything else (Postgres gone while claiming or marking): the job fails and BullMQ runs it again; its rows are
  // final, held (and then handed on) or still claimable
  for (const s of settled) if (s.status === 'rejected') errors.push(s.reason);
  if (errors.length) throw errors[0];
  const sent = settled.filter((s) => s.status === 'fulfilled' && s.value?.kind === 'sent').length;
  return { sent, handedOn: handOn.length };
}
