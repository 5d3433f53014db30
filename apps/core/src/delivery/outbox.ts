import { newId } from '../ids';
import type { JobsOptions } from 'bullmq';
import type { Prisma } from '../../../../generated/prisma/client';
import type { MessageKind } from '../../../../generated/prisma/enums';
import { Batcher } from '../batch';
import type { Tx } from '../db';
import { afterCommit } from '../after-commit';
import { DISPATCH, JOB_OPTIONS, QUEUE, jobId, queue, type DispatchPayload } from '../queues';
import { markEnqueued } from './repository';
import { dependencies, isRedisConnectionError, RedisNoAnswer } from '../outage';
import { withinRedisDeadline } from '../redis';

/**
 * The one way mail leaves: write Message rows (in the caller's transaction), then queue their delivery after commit.
 * Transactional copies, confirmation emails and sequence steps all go through here and through the same worker.
 */
export interface OutgoingEmail {
  accountId: number;
  mailboxId: number;
  /** the mailbox address: its domain names the Message-ID */
  fromAddress: string;
  kind: MessageKind;
  to: string;
  subject: string;
  text?: string | null;
  html?: string | null;
  sendId?: string;
  subscriberId?: number;
  prospectId?: number;
  step?: number;
  /** a sequence email: its campaign step's key and A/B variant (outreach/branches.ts) */
  stepKey?: string;
  variant?: number;
  inReplyTo?: string;
  references?: string;
  notBefore?: Date | null;
  /** the row's id when the caller needs it before the write (a confirmation's token is derived from it) */
  id?: string;
  /** the email's own headers (nodemailer's form), e.g. an outreach email's List-Unsubscribe */
  headers?: Record<string, unknown>;
}

/** `<uuid@domain>`: fixed when the row is written, so every retry of the row sends the same Message-ID. */
export function newMessageIdHeader(fromAddress: string, id: string): string {
  const domain = fromAddress.split('@')[1] || 'localhost';
  return `<${id}@${domain}>`;
}

export function messageRow(email: OutgoingEmail): Prisma.MessageCreateManyInput {
  const id = email.id ?? newId();
  return {
    id,
    accountId: email.accountId,
    mailboxId: email.mailboxId,
    kind: email.kind,
    sendId: email.sendId,
    subscriberId: email.subscriberId,
    prospectId: email.prospectId,
    step: email.step,
    ...(email.stepKey !== undefined ? { stepKey: email.stepKey } : {}),
    ...(email.variant !== undefined ? { variant: email.variant } : {}),
    to: email.to,
    subject: email.subject,
    text: email.text ?? null,
    html: email.html ?? null,
    inReplyTo: email.inReplyTo,
    references: email.references,
    messageIdHeader: newMessageIdHeader(email.fromAddress, id),
    notBefore: email.notBefore ?? null,
    ...(email.headers ? { headers: email.headers as Prisma.InputJsonValue } : {}),
  };
}

/** Writes the rows; returns their ids. Call inside the transaction that decided to send. */
export async function storeMessages(db: Tx, emails: OutgoingEmail[]): Promise<Prisma.MessageCreateManyInput[]> {
  const rows = emails.map(messageRow);
  if (rows.length) await db.message.createMany({ data: rows });
  return rows;
}

type DeliveryJob = { id: string; notBefore?: Date | null };

/**
 * Puts delivery jobs on the queue; job ids are deterministic, so queueing a message twice yields one job. `first`: at
 * the head of the queue, not behind its backlog (the reconciler's rescues: a dead worker's rows have waited a lease).
 */
export async function addDeliveryJobs(messages: DeliveryJob[], options: { first?: boolean } = {}): Promise<void> {
  if (!messages.length) return;
  const now = Date.now();
  const jobs = messages.map((m) => ({
    name: QUEUE.delivery,
    data: { messageId: m.id },
    opts: {
      ...JOB_OPTIONS.delivery,
      jobId: jobId.delivery(m.id),
      delay: m.notBefore ? Math.max(0, m.notBefore.getTime() - now) : undefined,
      ...(options.first ? { lifo: true } : {}),
    },
  }));
  // addBulk wraps its jobs in MULTI/EXEC: worth it for many, a cost for the common single copy
  if (jobs.length === 1) await queue(QUEUE.delivery).add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts);
  else await queue(QUEUE.delivery).addBulk(jobs);
}

/** Dispatch jobs are retried quickly: they fail only while Postgres or Redis does (an SMTP failure is the row's own). */
const DISPATCH_OPTIONS: JobsOptions = { ...JOB_OPTIONS.delivery, backoff: { type: 'exponential', delay: 1_000 } };

/**
 * The rows of a batch on the delivery queue: one row directly, several as one `dispatch` job that a worker delivers
 * as a batch (deliverBatch). BullMQ costs about 70 us of the API's CPU for each job it adds (a quarter of accepting a
 * send, bench/README.md), and as much again in the worker and in Redis to run it.
 */
async function dispatch(messages: DeliveryJob[]): Promise<void> {
  if (messages.length === 1) return addDeliveryJobs(messages);
  const payload: DispatchPayload = { messages: messages.map((m) => ({ id: m.id, notBefore: m.notBefore ? m.notBefore.getTime() : null })) };
  await queue(QUEUE.delivery).add(DISPATCH, payload, { ...DISPATCH_OPTIONS, jobId: jobId.dispatch(messages[0]!.id) });
}

/**
 * The rows of concurrent callers go to Redis together: one job, one round trip and one timer for a batch (batch.ts).
 * A failure is Redis's, not one caller's: every caller of the batch gets it at once (the Batcher would otherwise run
 * each again alone, and a request would wait out the timeout twice while Redis is down). One batch in flight, as for
 * the accept statement (sending/write.ts): larger `dispatch` jobs, fewer of them for the worker to run. One per process,
 * made by its main's wiring (the API's createApp, the worker's createDelivery) and passed down.
 */
export class DeliveryQueue {
  private readonly batcher = new Batcher<DeliveryJob[], Error | undefined>(
    async (lists) => {
      // Redis down is the dependency watch's one line while it lasts (the callers log at debug only). An answer later
      // than the timeout is not an outage (a busy host gives some): the rows go to the reconciler, without a warn line
      const failure = await withinRedisDeadline(dispatch(lists.flat())).then(
        () => undefined,
        (err: unknown) => {
          if (isRedisConnectionError(err) && !(err instanceof RedisNoAnswer)) dependencies.down('redis', err);
          return err instanceof Error ? err : new Error(String(err));
        },
      );
      return lists.map(() => failure);
    },
    { maxInFlight: 1, maxBatch: 100, gather: true },
  );

  /** the adds of addInBackground still waiting for Redis */
  private readonly background = new Set<Promise<void>>();

  /**
   * Queues the delivery of rows just accepted, together with those of concurrent callers. Rejects when Redis did not
   * take them (at once when it is down, after REDIS_DEADLINE_MS when it hangs).
   */
  async add(messages: DeliveryJob[]): Promise<void> {
    if (!messages.length) return;
    const failure = await this.batcher.submit(messages);
    if (failure) throw failure;
  }

  /**
   * `add` without the caller waiting: an accepted send is answered once its rows are committed, not once Redis took
   * its jobs (the round trip was a fifth of an accept's time under load). `onFailure` runs when Redis did not take
   * them; the rows are the reconciler's either way (a mark without a job is queued again after 30 s). A stopping
   * process waits for them with `settled`.
   */
  addInBackground(messages: DeliveryJob[], onFailure: (err: Error) => Promise<void>): void {
    const work: Promise<void> = this.add(messages)
      .catch(onFailure)
      .finally(() => this.background.delete(work));
    this.background.add(work);
  }

  /** Waits for every add of addInBackground made so far (a process that stops, before its connections close). */
  async settled(): Promise<void> {
    await Promise.all([...this.background]);
  }
}

/**
 * Puts delivery jobs on the queue and marks the rows enqueued (the reconciler re-queues rows left without the mark),
 * once the rows are committed: at once on a db outside a transaction, after the commit of an audited change's.
 */
export async function enqueueDelivery(db: Tx, messages: { id: string; notBefore?: Date | null }[], options: { first?: boolean } = {}): Promise<void> {
  if (!messages.length) return;
  await afterCommit(db, async (committed) => {
    await addDeliveryJobs(messages, options);
    await markEnqueued(committed, messages.map((m) => m.id));
  });
}
