import MailComposer from 'nodemailer/lib/mail-composer';
import type Mail from 'nodemailer/lib/mailer';
import type { Message, MessageAttempt } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { composeMail } from '../delivery/compose';
import type { EmailKinds } from '../delivery/kinds';
import { NotFound } from '../errors';
import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import { QUEUE, jobId, queue } from '../queues';
import { redis } from '../redis';
import { actionsFor } from '../sending/message-actions';
import { iso } from '../validate';
import { messageEventRows, webhookDeliveryRows } from './repository';

/** One line of a message's story: when, what happened, and what was said. */
export interface StoryStep {
  at: string | null;
  what: string;
  detail: string;
}

/** One delivery attempt: when, how it left the message (sent, deferred, failed, bounced), and what the server said. */
export interface StoryAttempt {
  attempt: number;
  at: string;
  outcome: string;
  response: string | null;
}

export interface MessageStory {
  message: {
    id: string;
    account: number;
    mailbox: { id: number; address: string };
    kind: string;
    to: string;
    subject: string;
    status: string;
    attempts: number;
    message_id: string;
    send_id: string | null;
    broadcast: number | null;
    prospect: { id: number; campaign: number; step: number | null } | null;
    smtp_response: string | null;
    last_error: string | null;
    bounce: PublicBounce | null;
    created_at: string;
    sent_at: string | null;
  };
  /** every state change the rows keep, oldest first */
  steps: StoryStep[];
  /** its delivery attempts, oldest first: each one that did not deliver, with its answer, then the delivered one */
  attempts: StoryAttempt[];
  events: {
    id: string;
    type: string;
    at: string;
    dispatched_at: string | null;
    deliveries: { webhook: number; url: string; attempt: number; status_code: number | null; error: string | null; at: string }[];
  }[];
  /** the header block as the email went (or will go) out, before the DKIM signature the transport adds */
  headers: string;
  /** the next try of a deferred message (its delivery job's due time), when the queue knows it */
  next_attempt_at: string | null;
  actions: { retry: boolean; cancel: boolean };
}

/** When the delivery job of a message is due, from the queue's delayed set (its score is the due time x 4096). */
async function nextAttemptAt(id: string): Promise<Date | null> {
  const score = await redis()
    .zscore(queue(QUEUE.delivery).keys.delayed!, jobId.delivery(id))
    .catch(() => null);
  return score === null ? null : new Date(Math.floor(Number(score) / 4096));
}

/** The header block of the email composed from its rows, dated when it went out (or now, for one still to go). */
async function headersOf(mail: Mail.Options): Promise<string> {
  const node = new MailComposer(mail as ConstructorParameters<typeof MailComposer>[0]).compile();
  return node.buildHeaders();
}

/** The statuses an attempt leaves its message in: a row queued, sending or cancelled tells no attempt's end. */
const ATTEMPT_ENDS = new Set(['sent', 'deferred', 'failed', 'bounced']);

type StoredMessage = Message & { failedAttempts: MessageAttempt[] };

/**
 * A message's attempts, oldest first: the kept rows of those that did not deliver (message_attempts), then the one
 * the message row itself tells when no row has it: the delivered one, or one made before its answers were kept (an
 * older row, or one past RETENTION_DAYS).
 */
function attemptsOf(m: StoredMessage): StoryAttempt[] {
  const attempts: StoryAttempt[] = m.failedAttempts.map((a) => ({ attempt: a.attempt, at: a.at.toISOString(), outcome: a.outcome, response: a.response }));
  const last = attempts.at(-1)?.attempt ?? 0;
  if (m.attempts > last && ATTEMPT_ENDS.has(m.status)) {
    attempts.push({ attempt: m.attempts, at: (m.sentAt ?? m.updatedAt).toISOString(), outcome: m.sentAt ? 'sent' : m.status, response: m.smtpResponse || m.lastError || null });
  }
  return attempts;
}

/**
 * A message's whole story for its console page and GET /admin/api/messages/:id: the row's state changes with their
 * times (accepted, scheduled, claimed, each attempt with its SMTP answer, deferred until, delivered, bounced with the
 * reader's reason, opened and clicked when tracked), its events with their webhook deliveries, and its headers.
 */
export async function messageStory(db: Db, kinds: EmailKinds, id: string): Promise<MessageStory> {
  const m = await db.message.findUnique({
    where: { id },
    include: {
      mailbox: true,
      send: true,
      prospect: { select: { id: true, campaignId: true } },
      open: true,
      clicks: { orderBy: { at: 'asc' }, take: 50 },
      failedAttempts: { orderBy: { attempt: 'asc' } },
    },
  });
  if (!m) throw new NotFound(`message ${id} not found`);
  const [eventRows, nextAt] = await Promise.all([messageEventRows(db, id), m.status === 'deferred' ? nextAttemptAt(id) : Promise.resolve(null)]);
  const deliveries = await webhookDeliveryRows(db, eventRows.map((e) => e.id));
  const bounce = m.bounce as unknown as Bounce | null;

  const steps: StoryStep[] = [];
  const origin =
    m.kind === 'broadcast' ? `a copy of broadcast ${m.broadcastId}` : m.kind === 'sequence' ? `step ${m.step ?? '?'} of a campaign sequence` : m.kind === 'confirmation' ? 'a subscription confirmation' : 'a send through the API';
  steps.push({ at: m.createdAt.toISOString(), what: 'accepted', detail: `${origin}, from ${m.mailbox.address} to ${m.to}` });
  if (m.notBefore && m.notBefore > m.createdAt) steps.push({ at: m.notBefore.toISOString(), what: 'scheduled', detail: 'not to go out before this time (send_at)' });
  if (m.status === 'sending') {
    steps.push({ at: m.updatedAt.toISOString(), what: 'claimed', detail: `by worker ${m.lockedBy ?? '(unknown)'}, lease until ${iso(m.lockedUntil) ?? '-'}` });
  }
  const attempts = attemptsOf(m);
  for (const a of attempts) steps.push({ at: a.at, what: `attempt ${a.attempt}`, detail: `${a.outcome}: ${a.response ?? '(no answer kept)'}` });
  if (m.status === 'deferred') {
    steps.push({ at: m.updatedAt.toISOString(), what: 'deferred', detail: `${m.lastError ?? 'a temporary failure'}; next attempt ${nextAt ? `at ${nextAt.toISOString()}` : 'when its job runs again'}` });
  }
  if (m.status === 'sent' && m.sentAt) steps.push({ at: m.sentAt.toISOString(), what: 'delivered', detail: m.smtpResponse ?? 'accepted by the recipient server' });
  if (m.status === 'failed') steps.push({ at: m.updatedAt.toISOString(), what: 'failed', detail: m.lastError ?? 'refused for good' });
  if (m.status === 'cancelled') steps.push({ at: m.updatedAt.toISOString(), what: 'cancelled', detail: m.lastError ?? 'a pre-send guard refused it' });
  if (bounce) {
    steps.push({
      at: bounce.at ? new Date(bounce.at).toISOString() : m.updatedAt.toISOString(),
      what: m.status === 'bounced' ? 'bounced' : 'bounce report',
      detail: `reason ${bounce.reason} (${bounce.class}${bounce.dead ? ', address suppressed' : ''})${bounce.status ? `, status ${bounce.status}` : ''}${bounce.smtp_code ? `, code ${bounce.smtp_code}` : ''}: ${bounce.diagnostic}`,
    });
  }
  if (m.open) steps.push({ at: m.open.firstAt.toISOString(), what: 'opened', detail: m.open.count > 1 ? `${m.open.count} times, last at ${m.open.lastAt.toISOString()}` : 'once' });
  for (const c of m.clicks) steps.push({ at: c.at.toISOString(), what: c.scanner ? 'clicked by a scanner (not counted)' : 'clicked', detail: `${c.url}${c.count > 1 ? ` (${c.count} times)` : ''}` });
  steps.sort((a, b) => (a.at ?? '').localeCompare(b.at ?? ''));

  const mail = composeMail(kinds, m, m.mailbox, m.send);
  mail.date = m.sentAt ?? new Date();
  return {
    message: {
      id: m.id,
      account: m.accountId,
      mailbox: { id: m.mailbox.id, address: m.mailbox.address },
      kind: m.kind,
      to: m.to,
      subject: m.subject,
      status: m.status,
      attempts: m.attempts,
      message_id: m.messageIdHeader,
      send_id: m.sendId,
      broadcast: m.broadcastId,
      prospect: m.prospect ? { id: m.prospect.id, campaign: m.prospect.campaignId, step: m.step } : null,
      smtp_response: m.smtpResponse,
      last_error: m.lastError,
      bounce: publicBounce(bounce),
      created_at: m.createdAt.toISOString(),
      sent_at: iso(m.sentAt),
    },
    steps,
    attempts,
    events: eventRows.map((e) => ({
      id: e.id,
      type: e.type,
      at: e.created_at.toISOString(),
      dispatched_at: iso(e.dispatched_at),
      deliveries: deliveries
        .filter((d) => d.event_id === e.id)
        .map((d) => ({ webhook: d.webhook_id, url: d.url, attempt: d.attempt, status_code: d.status_code, error: d.error, at: d.at.toISOString() })),
    })),
    headers: await headersOf(mail),
    next_attempt_at: iso(nextAt),
    actions: actionsFor(m.status),
  };
}
