import crypto from 'node:crypto';
import type { Prisma } from '../../../../generated/prisma/client';
import type { MessageKind } from '../../../../generated/prisma/enums';
import { rawQuery, type Tx } from '../db';
import { JOB_OPTIONS, QUEUE, jobId, queue } from '../queues';

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
  inReplyTo?: string;
  references?: string;
  notBefore?: Date | null;
}

/** `<uuid@domain>`: fixed when the row is written, so every retry of the row sends the same Message-ID. */
export function newMessageIdHeader(fromAddress: string, id: string): string {
  const domain = fromAddress.split('@')[1] || 'localhost';
  return `<${id}@${domain}>`;
}

export function messageRow(email: OutgoingEmail): Prisma.MessageCreateManyInput {
  const id = crypto.randomUUID();
  return {
    id,
    accountId: email.accountId,
    mailboxId: email.mailboxId,
    kind: email.kind,
    sendId: email.sendId,
    subscriberId: email.subscriberId,
    prospectId: email.prospectId,
    step: email.step,
    to: email.to,
    subject: email.subject,
    text: email.text ?? null,
    html: email.html ?? null,
    inReplyTo: email.inReplyTo,
    references: email.references,
    messageIdHeader: newMessageIdHeader(email.fromAddress, id),
    notBefore: email.notBefore ?? null,
  };
}

/** Writes the rows; returns their ids. Call inside the transaction that decided to send. */
export async function storeMessages(db: Tx, emails: OutgoingEmail[]): Promise<Prisma.MessageCreateManyInput[]> {
  const rows = emails.map(messageRow);
  if (rows.length) await db.message.createMany({ data: rows });
  return rows;
}

/** Puts delivery jobs on the queue; job ids are deterministic, so queueing a message twice yields one job. */
export async function addDeliveryJobs(messages: { id: string; notBefore?: Date | null }[]): Promise<void> {
  if (!messages.length) return;
  const now = Date.now();
  const jobs = messages.map((m) => ({
    name: QUEUE.delivery,
    data: { messageId: m.id },
    opts: {
      ...JOB_OPTIONS.delivery,
      jobId: jobId.delivery(m.id),
      delay: m.notBefore ? Math.max(0, m.notBefore.getTime() - now) : undefined,
    },
  }));
  // addBulk wraps its jobs in MULTI/EXEC: worth it for many, a cost for the common single copy
  if (jobs.length === 1) await queue(QUEUE.delivery).add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts);
  else await queue(QUEUE.delivery).addBulk(jobs);
}

/**
 * Puts delivery jobs on the queue and marks the rows enqueued (the reconciler re-queues rows left without the mark).
 * Call after the rows are committed.
 */
export async function enqueueDelivery(db: Tx, messages: { id: string; notBefore?: Date | null }[]): Promise<void> {
  if (!messages.length) return;
  await addDeliveryJobs(messages);
  await rawQuery(db, 'UPDATE messages SET enqueued_at = now() WHERE id = ANY($1::uuid[])', [messages.map((m) => m.id)]);
}

/** Clears the enqueued mark of rows whose jobs Redis did not take, so the reconciler queues them on its next run. */
export async function markNotEnqueued(db: Tx, ids: string[]): Promise<void> {
  await rawQuery(db, 'UPDATE messages SET enqueued_at = NULL WHERE id = ANY($1::uuid[])', [ids]);
}
