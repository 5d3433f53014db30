import crypto from 'node:crypto';
import type { Db } from '../db';
import { newId } from '../ids';
import { lazy } from '../lazy';
import { metrics } from '../metrics';
import { dmarcDisposition, type MxAuth } from './auth';
import { pendingReceived, receivedEvent, type ArrivalHeaders } from './message';
import { answeredMailboxOf, insertArrivals, insertReceivedEvent, keepEventData, leaveHeld, mxMessageById, routeEndpointOf, senderMailboxOf, type ArrivalWrite, type NewMxMessage, type RouteRow } from './repository';
import type { SpamResult } from './spam';

/** A recipient the MX took at RCPT: an inbound route's address, or a VERP return path of one of our messages. */
export type Target = RouteTarget | { kind: 'report'; address: string; messageId: string };
type RouteTarget = { kind: 'route'; address: string; accountId: number; domain: string; route: RouteRow; hash: string | null };

export interface Arrival {
  raw: Buffer;
  mailFrom: string;
  clientAddress: string;
  helo: string;
  auth: MxAuth;
  spam: SpamResult | null;
  /** its header's From, Subject and thread ids (the body is parsed after the 250, for the event: builtReceived) */
  headers: ArrivalHeaders;
  receivedAt: Date;
}

/** the inbound reader's classifier (mailparser under it), loaded by the first report: the API never needs it */
const classifier = lazy(() => (require('../inbound/classify') as typeof import('../inbound/classify')).classify);
/** the inbound reader's actions (outreach, suppressions, analytics under them: about 8 MB), loaded by the first report or reply */
const handleInbound = lazy(() => (require('../inbound/handle') as typeof import('../inbound/handle')).handleInbound);

/** Why a message is held, or null when it goes on to the customer. */
export function holdReason(route: RouteRow, auth: MxAuth, spam: SpamResult | null): string | null {
  if (route.action === 'hold') return 'route';
  if (dmarcDisposition(auth) === 'quarantine') return 'dmarc quarantine';
  if (spam && route.spamThreshold !== null && spam.score > route.spamThreshold) return `spam score ${spam.score} over ${route.spamThreshold}`;
  return null;
}

/**
 * A report's place in its mailbox as the inbound reader claims it: UIDVALIDITY 0 (never an IMAP one, RFC 3501's nz-number)
 * and a UID from the message's bytes, so the same report sent again after a lost 250 is handled once.
 */
const reportUid = (raw: Buffer) => crypto.createHash('sha256').update(raw).digest().readBigUInt64BE(0) >> 1n;

/**
 * Writes what arrived before the MX answers 250 (docs/mx.md, "Durable before 250"): reports, and replies at a route
 * address, go through the inbound reader's classifier, proof and actions (inbound/handle.ts, exactly once per message);
 * each route it reached gets one row with the raw MIME, and a delivered one its `inbound.received` in the same
 * statement, written short (`{id, pending}`: its content is built from the stored message when it is sent,
 * builtReceived). Throws when Postgres is away (the session answers 451 and the sender retries).
 */
export async function storeArrival(db: Db, arrival: Arrival, targets: Target[], write: (arrival: ArrivalWrite) => Promise<void> = (a) => insertArrivals(db, [a])): Promise<{ ids: string[] }> {
  const ids: string[] = [];
  const reports = targets.filter((t) => t.kind === 'report');
  for (const report of reports) {
    const mailbox = await senderMailboxOf(db, report.messageId);
    if (!mailbox) continue;
    const mail = await classifier()(arrival.raw);
    // the envelope recipient is the proof: the VERP token was checked at RCPT
    mail.verp = report.messageId;
    await handleInbound()(db, { mailbox, uidValidity: 0n, uid: reportUid(arrival.raw), raw: arrival.raw }, mail, arrival.receivedAt);
    metrics.mxMessages.inc({ outcome: 'report' });
  }

  const routed = targets.filter((t): t is RouteTarget => t.kind === 'route');
  await answerReplies(db, arrival, routed);

  const byRoute = new Map<number, { target: RouteTarget; to: string[] }>();
  for (const t of routed) {
    const entry = byRoute.get(t.route.id) ?? { target: t, to: [] };
    entry.to.push(t.address);
    byRoute.set(t.route.id, entry);
  }
  if (!byRoute.size) return { ids };

  const rows: (NewMxMessage & { event: boolean })[] = [...byRoute.values()].map(({ target, to }) => {
    const reason = holdReason(target.route, arrival.auth, arrival.spam);
    return {
      id: newId(),
      accountId: target.accountId,
      routeId: target.route.id,
      domain: target.domain,
      status: reason ? 'held' : 'delivered',
      reason,
      hash: target.hash,
      mailFrom: arrival.mailFrom,
      rcptTo: to,
      clientAddress: arrival.clientAddress,
      helo: arrival.helo,
      fromAddress: arrival.headers.from.slice(0, 998),
      subject: arrival.headers.subject.slice(0, 998),
      auth: arrival.auth as never,
      spam: arrival.spam as never,
      raw: arrival.raw,
      receivedAt: arrival.receivedAt,
      event: !reason,
    };
  });
  const byRouteEndpoint = new Map([...byRoute.values()].map(({ target }) => [target.route.id, target.route.endpointId]));
  await write({
    raw: arrival.raw,
    rows: rows.map(({ event: _event, raw: _raw, ...row }) => row),
    events: rows.flatMap((row) => (row.event ? [{ accountId: row.accountId, endpointId: byRouteEndpoint.get(row.routeId!) ?? null, data: pendingReceived(row.id) }] : [])),
  });
  for (const row of rows) {
    ids.push(row.id);
    metrics.mxMessages.inc({ outcome: row.status });
    if (row.reason?.startsWith('spam')) metrics.mxSpam.inc();
  }
  return { ids };
}

/**
 * A reply at a route address (docs/mx.md, "Bounces, complaints and replies"): when its In-Reply-To / References name an
 * email the route's account sent, it goes through the inbound reader's classifier, proof and actions in the mailbox
 * that sent it (a reply stops the prospect's sequence, an auto-reply pauses it, as read over IMAP), before the row is
 * written, so a retry after a lost 250 finds it claimed. A report at a route address proves nothing: the customer's
 * message only.
 */
async function answerReplies(db: Db, arrival: Arrival, routed: RouteTarget[]): Promise<void> {
  const threadIds = arrival.headers.threadIds;
  if (!threadIds.length) return;
  for (const accountId of new Set(routed.map((t) => t.accountId))) {
    const mailbox = await answeredMailboxOf(db, accountId, threadIds);
    if (!mailbox) continue;
    const mail = await classifier()(arrival.raw);
    if (mail.report) return;
    await handleInbound()(db, { mailbox, uidValidity: 0n, uid: reportUid(arrival.raw), raw: arrival.raw }, mail, arrival.receivedAt);
  }
}

/**
 * The webhook sender's fill of `inbound.received` (webhooks/deliver.ts, wired by the worker): an event the MX wrote
 * short is built from the stored message once, before its first POST, and kept in the event, so every endpoint and
 * every retry posts the same body; its URLs expire RETENTION_DAYS after the arrival, with the message. Null when the
 * message is gone (past retention).
 */
export async function builtReceived(db: Db, event: { id: string; data: unknown }): Promise<unknown> {
  const data = event.data as { id?: string; pending?: boolean };
  if (data.pending !== true || typeof data.id !== 'string') return event.data;
  const row = await mxMessageById(db, data.id);
  if (!row) return null;
  return keepEventData(db, event.id, await receivedEvent(row, undefined, row.receivedAt));
}

/** A held message goes on to the customer as `inbound.received` (console, admin API); NotFound-like false when not held. */
export async function releaseHeld(db: Db, id: string): Promise<boolean> {
  const row = await mxMessageById(db, id);
  if (!row || row.status !== 'held') return false;
  const [event, endpointId] = await Promise.all([receivedEvent(row), routeEndpointOf(db, row.routeId)]);
  return db.$transaction(async (tx) => {
    if (!(await leaveHeld(tx, id, 'delivered'))) return false;
    await insertReceivedEvent(tx, { accountId: row.accountId, endpointId, data: event });
    return true;
  });
}

/** A held message is dropped: kept for the record (until retention), never delivered. */
export async function dropHeld(db: Db, id: string): Promise<boolean> {
  return leaveHeld(db, id, 'dropped');
}

/** POST /admin/api/inbound/:id/replay: a delivered message's event written again (a new event id, fresh URLs). */
export async function replayReceived(db: Db, id: string): Promise<boolean> {
  const row = await mxMessageById(db, id);
  if (!row || row.status !== 'delivered') return false;
  const [event, endpointId] = await Promise.all([receivedEvent(row), routeEndpointOf(db, row.routeId)]);
  await insertReceivedEvent(db, { accountId: row.accountId, endpointId, data: event });
  return true;
}
