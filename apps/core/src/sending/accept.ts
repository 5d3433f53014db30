import { FinishedWaits } from './finished';
import { keyDomainRefusal } from '../auth/keys';
import { newId } from '../ids';
import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { DeliveryQueue } from '../delivery/outbox';
import { isFinalStatus } from '../message-status';
import { markNotEnqueued } from '../delivery/repository';
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from '../errors';
import { sha256 } from '../crypto';
import { config } from '../config';
import { DomainStandings, ForeignMailboxes, displayNameRefusal, fromRefusal } from '../domains/sending';
import { logger } from '../logger';
import { earlierAnswer, finishIdempotent, keyChangingHands, releaseIdempotent, requestFingerprint, startIdempotent } from '../idempotency';
import { MailboxCache } from './mailbox';
import { dailyQuota, refuseOverLimit, secondsToNextUtcMidnight, type DailyQuota } from './quota';
import { SendWriter, type AcceptedWrite, type SkipReason } from './write';
import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import { SEND_LIMITS, checkEmailSize, checkRenderedSubject, parseSendRequest, type SendRequest } from './schema';
import { TemplateCache, type TemplateStamp } from '../templates/cache';
import { SandboxWriter } from './sandbox-write';
import { sendWithCopies } from './repository';

/** How many times a send renders again when a template it used changed before its write (each time: a change). */
const RENDER_ATTEMPTS = 3;

/** The request with its template rendered into subject, html and text (422 naming what is wrong), and the versions used. */
export async function rendered(db: Db, sending: Sending, accountId: number, request: SendRequest): Promise<{ request: SendRequest; stamp?: TemplateStamp }> {
  if (!request.template) return { request };
  const { email, stamp } = await sending.templates.render(db, accountId, request.template.ref, request.template.variables);
  checkRenderedSubject(email.subject, request.template.ref);
  checkEmailSize({ text: email.text, html: email.html, attachments: request.attachments });
  return { request: { ...request, subject: email.subject, html: email.html, text: email.text }, stamp };
}
import { iso } from '../validate';

export interface SendAnswer {
  ok: true;
  id: string;
  status: string;
  messages: { id: string; to: string; status: string; bounce?: PublicBounce; message_id?: string }[];
  skipped: { to: string; reason: SkipReason }[];
  /** GET only: when the send goes out (null: as soon as it can) */
  send_at?: string | null;
}

export interface AcceptedSend {
  status: 200 | 202;
  body: SendAnswer;
  quota: DailyQuota;
  /** the answer of an earlier request with the same Idempotency-Key */
  replayed: boolean;
}

/**
 * What accepting sends keeps in an API process: the writer its accepted sends share (one statement and commit for
 * those that arrive together), the queueing of their deliveries (one Redis call for those too), the key's mailboxes, briefly, and the waiters of `Prefer: wait`. The API's createApp
 * makes one over its database and passes it to the routes, the fast lane and the MCP tools; `finished.stop()` closes
 * the waiters' connection.
 */
export interface Sending {
  writer: SendWriter;
  templates: TemplateCache;
  deliveries: DeliveryQueue;
  mailboxes: MailboxCache;
  /** the accounts' sending domains, briefly (REQUIRE_VERIFIED_DOMAIN) */
  domains: DomainStandings;
  /** which Reply-To and Sender addresses are other accounts' mailboxes, briefly */
  foreignMailboxes: ForeignMailboxes;
  finished: FinishedWaits;
  /** the write of test keys' sends (docs/sandbox.md): into the sandbox, no quota */
  sandbox: SandboxWriter;
}

export function createSending(db: Db): Sending {
  return {
    writer: new SendWriter(db),
    templates: new TemplateCache(),
    deliveries: new DeliveryQueue(),
    mailboxes: new MailboxCache(),
    domains: new DomainStandings(),
    foreignMailboxes: new ForeignMailboxes(),
    finished: new FinishedWaits(),
    sandbox: new SandboxWriter(db),
  };
}

/** The idempotency scope of sends (records written before route scoping have it as their default). */
export const SEND_ROUTE = 'POST /send';

/** The longest `Prefer: wait` honoured; a larger N waits this long. */
export const MAX_WAIT_SECONDS = 30;

/**
 * The send's own status from its copies: queued until any copy was tried, sending while some are unfinished; once all
 * are finished: sent when at least one was delivered, bounced when all bounced, cancelled when all were cancelled
 * (withdrawn: cancel.ts), failed otherwise.
 */
export function sendStatus(statuses: string[]): string {
  if (statuses.every((s) => s === 'queued')) return 'queued';
  if (!statuses.every((s) => isFinalStatus(s))) return 'sending';
  if (statuses.some((s) => s === 'sent')) return 'sent';
  if (statuses.every((s) => s === 'cancelled')) return 'cancelled';
  return statuses.every((s) => s === 'bounced') ? 'bounced' : 'failed';
}

/** 403 when a send's reply_to is another account's mailbox (domains/sending.ts ForeignMailboxes): POST /send and each message of a batch. */
export async function refuseForeignReplyTo(db: Tx, sending: Sending, accountId: number, parsed: SendRequest): Promise<void> {
  if (!parsed.replyTo) return;
  const foreign = await sending.foreignMailboxes.refusal(db, accountId, [/<([^<>]+)>$/.exec(parsed.replyTo)?.[1] ?? parsed.replyTo]);
  if (foreign) throw new Forbidden(`reply_to: ${foreign}`);
}

/**
 * POST /api/v1/send: validates, then in one transaction drops suppressed and stop-listed recipients, counts the copies
 * against the key's daily limit (all or nothing), writes the Send and one Message per recipient and, with an
 * Idempotency-Key, the answer to replay. After commit it answers, and queues delivery meanwhile; if Redis cannot take
 * the jobs the rows are marked un-queued and the reconciler queues them.
 */
export async function acceptSend(
  db: Db,
  sending: Sending,
  key: ApiKey,
  body: unknown,
  options: { idempotencyKey: string | null; waitSeconds: number },
): Promise<AcceptedSend> {
  const mailbox = await sending.mailboxes.sendingMailbox(db, key.mailboxId);
  const parsed = parseSendRequest(body, mailbox.address);
  const keyDomain = keyDomainRefusal(key, mailbox.address);
  if (keyDomain) throw new Forbidden(`from: ${keyDomain}`);
  if (config().requireVerifiedDomain) {
    // from the process's cache of the account's domains: no extra query while it is fresh
    const refusal = fromRefusal({ mailboxAddress: mailbox.address, domains: await sending.domains.of(db, key.accountId), requireVerified: true, domainAddresses: false }, mailbox.address);
    if (refusal) throw new Forbidden(`from: ${refusal}`);
  }
  await refuseForeignReplyTo(db, sending, key.accountId, parsed);
  let { request, stamp } = await rendered(db, sending, key.accountId, parsed);
  const idempotent = options.idempotencyKey ? await startIdempotent(db, { apiKeyId: key.id, route: SEND_ROUTE, key: options.idempotencyKey }, requestFingerprint(body)) : null;
  if (idempotent?.kind === 'replay') {
    return { status: idempotent.status as 200 | 202, body: idempotent.body as SendAnswer, quota: await dailyQuota(db, key), replayed: true };
  }
  const recordId = idempotent?.recordId;
  let accepted: { answer: SendAnswer; quota: DailyQuota; rows: { id: string; notBefore?: Date | null }[] };
  try {
    const sendId = newId();
    // a test key's send goes to the sandbox (the only branch the live path takes for it)
    const writer = key.mode === 'test' ? sending.sandbox : sending.writer;
    const write = () => writer.write({ key, mailbox, request: { ...request, fromName: request.fromName ?? mailbox.name }, sendId, idempotencyRecord: recordId, templates: stamp });
    let written = await write();
    // a template changed since this process compiled it: render from the current version and write again
    for (let attempt = 1; written.stale && attempt < RENDER_ATTEMPTS; attempt++) {
      sending.templates.forget(key.accountId, parsed.template!.ref);
      ({ request, stamp } = await rendered(db, sending, key.accountId, parsed));
      written = await write();
    }
    if (written.stale) throw new Conflict('the template changed while this send was written: send it again');
    if (!written.kept.length) throw new Unprocessable('nobody to write to: every recipient is suppressed or on the stop list');
    if (written.used === null) await refuseOverLimit(db, key, written.kept.length);
    accepted = {
      answer: { ok: true, id: sendId, status: 'queued', messages: written.kept.map((m) => ({ ...m, status: 'queued' })), skipped: written.skipped },
      quota: { limit: key.dailyLimit, used: written.used!, resetSeconds: secondsToNextUtcMidnight() },
      rows: written.kept.map((m) => ({ id: m.id, notBefore: request.sendAt })),
    };
  } catch (err) {
    if (recordId !== undefined) await releaseIdempotent(db, recordId);
    throw err;
  }

  queueAccepted(db, sending, accepted.answer.id, accepted.rows);

  const waitSeconds = Math.min(options.waitSeconds, MAX_WAIT_SECONDS);
  if (waitSeconds > 0 && !accepted.rows.some((r) => r.notBefore)) {
    const finished = await sending.finished.waitFor(db, accepted.rows.map((r) => r.id), waitSeconds);
    if (finished) {
      const messages = accepted.answer.messages.map((m) => ({ ...m, status: finished.get(m.id) ?? m.status }));
      const answer: SendAnswer = { ...accepted.answer, status: sendStatus(messages.map((m) => m.status)), messages };
      if (recordId !== undefined) await finishIdempotent(db, recordId, 200, answer);
      return { status: 200, body: answer, quota: accepted.quota, replayed: false };
    }
  }
  return { status: 202, body: accepted.answer, quota: accepted.quota, replayed: false };
}

/** The idempotency scope of messages submitted over SMTP: their key is the client's Message-ID. */
export const SMTP_ROUTE = 'SMTP message';

/** A message submitted over SMTP, after its MIME was prepared (submission/mime.ts). */
export interface RawSubmission {
  /** the envelope's recipients (RCPT TO), each to get a copy of its own */
  to: string[];
  raw: Buffer;
  /** the header From's address and name */
  from: string;
  fromName: string;
  subject: string;
  /** the client's Message-ID: the same one from the same key within 24 hours is accepted once */
  messageId: string | null;
  /** the send's id, made before the MIME (it names a Message-ID the client did not write) */
  sendId: string;
  /** the Message-ID the message carries (the client's, or the one put in): each copy is stored with it */
  messageIdHeader: string;
  /** the addresses of its Reply-To and Sender fields (none of them may be another account's mailbox) */
  replyAddresses?: string[];
}

/**
 * A message submitted over SMTP, accepted with every rule of POST /api/v1/send and the same write: the From rule, the
 * recipients (de-duplicated, at most 50), suppressions, the stop list, the key's daily limit (all or nothing), the
 * Send and one copy per recipient in one statement and commit, then delivery queued. The MIME is kept as written. A
 * Message-ID the key used within 24 hours answers the first send again and writes nothing: the same statement takes
 * the Message-ID's key, one round trip and one commit in all.
 */
export async function acceptRawSend(db: Db, sending: Sending, key: ApiKey, message: RawSubmission): Promise<AcceptedSend> {
  const mailbox = await sending.mailboxes.sendingMailbox(db, key.mailboxId);
  // the From rule of every way in (domains/sending.ts): the key's mailbox address, or any address of a domain the account
  // verified, since a submitted message keeps the From its client wrote
  const domains = await sending.domains.of(db, key.accountId);
  const refusal = keyDomainRefusal(key, message.from) ?? fromRefusal({ mailboxAddress: mailbox.address, domains, requireVerified: config().requireVerifiedDomain, domainAddresses: true }, message.from) ?? displayNameRefusal(message.fromName);
  // the SMTP answer names the header From itself (550 5.7.1 From <address>: ..., submission/server.ts)
  if (refusal) throw new Forbidden(refusal);
  const foreign = await sending.foreignMailboxes.refusal(db, key.accountId, message.replyAddresses ?? []);
  if (foreign) throw new Forbidden(foreign);
  const to = [...new Set(message.to.map((address) => address.toLowerCase()))];
  if (!to.length) throw new Unprocessable('nobody to write to');
  if (to.length > SEND_LIMITS.recipients) throw new BadRequest(`at most ${SEND_LIMITS.recipients} recipients per message`);
  // the fingerprint is the same whatever the body: a client's retry is the same message, however it was re-encoded. The
  // write takes the key itself (WRITE_CLAIMED_SENDS): its record carries the send's answer and is done once the send exists
  const claim = message.messageId ? { route: SMTP_ROUTE, key: sha256(message.messageId), fingerprint: sha256(SMTP_ROUTE) } : undefined;
  const request = {
    to,
    subject: message.subject,
    text: null,
    html: null,
    fromName: message.fromName,
    replyTo: null,
    headers: {},
    attachments: [],
    sendAt: null,
    metadata: {},
  };
  const writer = key.mode === 'test' ? sending.sandbox : sending.writer;
  let written: AcceptedWrite | undefined;
  for (let round = 0; round < 3; round++) {
    const attempt = await writer.write({ key, mailbox, request, sendId: message.sendId, idempotencyRecord: undefined, raw: message.raw, headerFrom: message.from, messageIdHeader: message.messageIdHeader, claim });
    if (attempt.claimed !== null || !claim) {
      written = attempt;
      break;
    }
    // the key is held: the earlier send's answer, 409 while it is being accepted, or (expired, abandoned) free again
    const earlier = await earlierAnswer(db, { apiKeyId: key.id, route: claim.route, key: claim.key }, claim.fingerprint, { doneWithSend: true });
    if (earlier) return { status: earlier.status as 200 | 202, body: earlier.body as SendAnswer, quota: await dailyQuota(db, key), replayed: true };
  }
  if (!written) throw keyChangingHands();
  let accepted: { answer: SendAnswer; quota: DailyQuota; rows: { id: string }[] };
  try {
    if (!written.kept.length) throw new Unprocessable('nobody to write to: every recipient is suppressed or on the stop list');
    if (written.used === null) await refuseOverLimit(db, key, written.kept.length);
    accepted = {
      answer: { ok: true, id: message.sendId, status: 'queued', messages: written.kept.map((m) => ({ ...m, status: 'queued' })), skipped: written.skipped },
      quota: { limit: key.dailyLimit, used: written.used!, resetSeconds: secondsToNextUtcMidnight() },
      rows: written.kept.map((m) => ({ id: m.id })),
    };
  } catch (err) {
    // refused: the key is free for the client's next try
    if (written.claimed != null) await releaseIdempotent(db, written.claimed);
    throw err;
  }
  queueAccepted(db, sending, accepted.answer.id, accepted.rows);
  return { status: 202, body: accepted.answer, quota: accepted.quota, replayed: false };
}

/**
 * Queues the deliveries of an accepted send, without its answer waiting for Redis (DeliveryQueue.addInBackground); if
 * Redis cannot take them the rows are marked un-queued for the reconciler.
 */
function queueAccepted(db: Db, sending: Sending, sendId: string, rows: { id: string; notBefore?: Date | null }[]): void {
  sending.deliveries.addInBackground(rows, async (err) => {
    // Redis did not take the jobs: the outage's one line is DeliveryQueue's (outage.ts), not one a send
    logger.debug({ send: sendId, err: err.message }, 'could not queue delivery now; the reconciler will');
    await markNotEnqueued(db, rows.map((r) => r.id)).catch(() => undefined);
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** GET /api/v1/send/:id: the same shape as the POST answer with current statuses, for the key's own account only. */
export async function findSend(db: Tx, accountId: number, id: string): Promise<SendAnswer> {
  const send = UUID.test(id) ? await sendWithCopies(db, accountId, id) : undefined;
  if (!send) throw new NotFound(`no send with id ${id}`);
  const messages = send.copies.map((m) => {
    const bounce = publicBounce(m.bounce as Bounce | null);
    // the Message-ID header is fixed when the copy is written (delivery/outbox.ts), so it is known before it goes out
    return { id: m.id, to: m.to, status: m.status, message_id: m.message_id, ...(bounce ? { bounce } : {}) };
  });
  return {
    ok: true,
    id: send.id,
    status: sendStatus(messages.map((m) => m.status)),
    messages,
    skipped: send.skipped as SendAnswer['skipped'],
    send_at: iso(send.send_at),
  };
}
