import type { Prisma } from '../../../../generated/prisma/client';
import type { InboundRouteAction, MxMessageStatus } from '../../../../generated/prisma/enums';
import { rawQuery, type Db, type Tx } from '../db';
import { subscribed } from '../events/repository';
import { accountWhere, type AccountScope } from '../account-scope';

/** The MX's statements (docs/mx.md): inbound domains, their routes, and the messages it accepted. */

/** A route as the MX matches it (mx/routes.ts). */
export interface RouteRow {
  id: number;
  accountId: number;
  domainId: number;
  match: string;
  action: InboundRouteAction;
  endpointId: number | null;
  spamThreshold: number | null;
}

/**
 * The inbound domain of this name (verified, turned inbound, and with `requireMxRecord` its MX record found by a check)
 * with its routes, or null: one statement through the pool, so taking mail for a route never loads Prisma's query
 * compiler (about 75 MB of the MX's RSS, bench/mx.ts).
 */
export async function inboundDomainRoutes(db: Db, name: string, requireMxRecord: boolean): Promise<{ id: number; accountId: number; name: string; routes: RouteRow[] } | null> {
  const [row] = await rawQuery<{ id: number; account_id: number; name: string; routes: RouteRow[] }>(
    db,
    `SELECT d.id, d.account_id, d.name,
            COALESCE(json_agg(json_build_object('id', r.id, 'accountId', r.account_id, 'domainId', r.domain_id, 'match', r.match, 'action', r.action,
                                                'endpointId', r.endpoint_id, 'spamThreshold', r.spam_threshold) ORDER BY r.id) FILTER (WHERE r.id IS NOT NULL), '[]') AS routes
     FROM domains d LEFT JOIN inbound_routes r ON r.domain_id = d.id
     WHERE d.name = $1 AND d.status = 'verified' AND d.inbound AND (NOT $2 OR d.inbound_mx_found_at IS NOT NULL)
     GROUP BY d.id ORDER BY d.id LIMIT 1`,
    [name, requireMxRecord],
    'mx-domain-routes',
  );
  return row ? { id: row.id, accountId: row.account_id, name: row.name, routes: row.routes } : null;
}

export interface NewMxMessage {
  id: string;
  accountId: number;
  routeId: number | null;
  domain: string;
  status: MxMessageStatus;
  reason: string | null;
  hash: string | null;
  mailFrom: string;
  rcptTo: string[];
  clientAddress: string;
  helo: string;
  fromAddress: string;
  subject: string;
  auth: Prisma.InputJsonValue;
  spam: Prisma.InputJsonValue | null;
  raw: Buffer;
  receivedAt: Date;
}

/** One arrival to write: its raw bytes, one row per route it reached, and the events of the delivered ones. */
export interface ArrivalWrite {
  raw: Buffer;
  rows: Omit<NewMxMessage, 'raw'>[];
  events: ReceivedEvent[];
}

export async function insertArrival(db: Db, raw: Buffer, rows: Omit<NewMxMessage, 'raw'>[], events: ReceivedEvent[]): Promise<void> {
  await insertArrivals(db, [{ raw, rows, events }]);
}

/**
 * The rows of several arrivals and the `inbound.received` events of the delivered ones, in ONE statement: atomic
 * without a transaction held open, one commit for the arrivals of many sessions (the MX's group commit, bench/mx.ts),
 * and through the pool without Prisma's cost per byte of a 25 MB bytea. The arrivals' raw bytes go as one bytea
 * parameter, each row taking its slice, so the statement's text is the same for every batch size: each connection
 * prepares and plans it once, where a text per size was planned anew for each (about 1 ms a plan: 13% of the
 * statement's time in the mx phase, pg_stat_statements).
 */
export async function insertArrivals(db: Db, arrivals: ArrivalWrite[]): Promise<void> {
  let offset = 1;
  const slices = arrivals.map((a) => {
    const slice = { offset, size: a.raw.length };
    offset += a.raw.length;
    return slice;
  });
  await rawQuery(
    db,
    `WITH stored AS (
       INSERT INTO mx_messages (id, account_id, route_id, domain, status, reason, hash, mail_from, rcpt_to, client_address, helo, from_address, subject, auth, spam, raw, size, received_at, delivered_at)
       SELECT r.id, r.account_id, r.route_id, r.domain, r.status::"MxMessageStatus", r.reason, r.hash, r.mail_from,
              ARRAY(SELECT jsonb_array_elements_text(r.rcpt_to)), r.client_address, r.helo, r.from_address, r.subject, r.auth, r.spam,
              substring($3::bytea FROM r.raw_offset FOR r.raw_size), r.raw_size, r.received_at,
              CASE WHEN r.status = 'delivered' THEN r.received_at END
       FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, account_id int, route_id int, domain text, status text, reason text, hash text,
              mail_from text, rcpt_to jsonb, client_address text, helo text, from_address text, subject text, auth jsonb, spam jsonb, received_at timestamptz,
              raw_offset int, raw_size int)
       RETURNING id
     )
     INSERT INTO events (account_id, type, data, endpoint_id)
     SELECT e.account_id, 'inbound.received', e.data, e.endpoint_id FROM jsonb_to_recordset($2::jsonb) AS e(account_id int, data jsonb, endpoint_id int)
     WHERE ${wanted('e')}`,
    [
      JSON.stringify(
        arrivals.flatMap((a, i) =>
          a.rows.map((r) => ({
            id: r.id, account_id: r.accountId, route_id: r.routeId, domain: r.domain, status: r.status, reason: r.reason, hash: r.hash, mail_from: r.mailFrom,
            rcpt_to: r.rcptTo, client_address: r.clientAddress, helo: r.helo, from_address: r.fromAddress, subject: r.subject, auth: r.auth, spam: r.spam,
            received_at: r.receivedAt.toISOString(), raw_offset: slices[i]!.offset, raw_size: slices[i]!.size,
          })),
        ),
      ),
      JSON.stringify(arrivals.flatMap((a) => a.events.map((e) => ({ account_id: e.accountId, data: e.data, endpoint_id: e.endpointId })))),
      // a lone arrival's bytes as they are (a 25 MB message is not copied)
      arrivals.length === 1 ? arrivals[0]!.raw : Buffer.concat(arrivals.map((a) => a.raw), offset - 1),
    ],
    'mx-arrivals',
  );
}

/** An `inbound.received` to write: for the route's endpoint only when it names one (docs/mx.md), else for every subscribed endpoint. */
export interface ReceivedEvent {
  accountId: number;
  endpointId: number | null;
  data: unknown;
}

/** SQL: is the event (alias `e`, with account_id and endpoint_id) wanted: its endpoint enabled, or any endpoint subscribed. */
const wanted = (e: string) =>
  `CASE WHEN ${e}.endpoint_id IS NULL THEN ${subscribed(`${e}.account_id`, "'inbound.received'")}
        ELSE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = ${e}.endpoint_id AND w.account_id = ${e}.account_id AND w.enabled) END`;

/** A release's or a replay's event, inside the caller's transaction. */
export async function insertReceivedEvent(tx: Tx, event: ReceivedEvent): Promise<void> {
  await rawQuery(
    tx,
    `INSERT INTO events (account_id, type, data, endpoint_id)
     SELECT e.account_id, 'inbound.received', e.data, e.endpoint_id FROM (SELECT $1::int AS account_id, $2::jsonb AS data, $3::int AS endpoint_id) e
     WHERE ${wanted('e')}`,
    [event.accountId, JSON.stringify(event.data), event.endpointId],
  );
}

/**
 * Puts an event's built data in place of its short form (mx/store.ts builtReceived) unless another sender did first,
 * and answers the data kept, as Postgres stores it (so the first POST's body is a retry's). Two statements: a losing
 * UPDATE's own snapshot would not see the winner's data.
 */
export async function keepEventData(db: Db, eventId: string, data: unknown): Promise<unknown> {
  const [kept] = await rawQuery<{ data: unknown }>(
    db,
    `UPDATE events SET data = $2::jsonb WHERE id = $1::uuid AND data->>'pending' = 'true' RETURNING data`,
    [eventId, JSON.stringify(data)],
  );
  if (kept) return kept.data;
  const [current] = await rawQuery<{ data: unknown }>(db, `SELECT data FROM events WHERE id = $1::uuid`, [eventId]);
  return current ? current.data : null;
}

/** The endpoint the message's route names, or null (every endpoint; also when the route is gone). */
export async function routeEndpointOf(db: Tx, routeId: number | null): Promise<number | null> {
  if (routeId === null) return null;
  return (await db.inboundRoute.findUnique({ where: { id: routeId }, select: { endpointId: true } }))?.endpointId ?? null;
}

export async function mxMessageById(db: Tx, id: string) {
  return db.mxMessage.findUnique({ where: { id } });
}

export type MxMessageRow = NonNullable<Awaited<ReturnType<typeof mxMessageById>>>;

/** Moves a held message on; false when it was not held any more (another operator got there first). */
export async function leaveHeld(tx: Tx, id: string, status: MxMessageStatus): Promise<boolean> {
  const { count } = await tx.mxMessage.updateMany({ where: { id, status: 'held' }, data: { status, deliveredAt: status === 'delivered' ? new Date() : null } });
  return count === 1;
}

/** Newest first, without the raw bytes. */
export async function mxMessagesWhere(db: Db | Tx, where: { accountId?: AccountScope; status?: MxMessageStatus; before?: Date }, limit: number) {
  return db.mxMessage.findMany({
    where: { ...accountWhere(where.accountId), status: where.status, receivedAt: where.before ? { lt: where.before } : undefined },
    omit: { raw: true },
    orderBy: [{ receivedAt: 'desc' }, { id: 'desc' }],
    take: limit,
  });
}

/** The mailbox that sent one of our messages (a VERP address names the message), or null when it is gone. */
export async function senderMailboxOf(db: Tx, messageId: string) {
  const message = await db.message.findUnique({ where: { id: messageId }, select: { mailboxId: true } });
  return message ? db.mailbox.findUnique({ where: { id: message.mailboxId } }) : null;
}

/**
 * The mailbox of the account's latest message whose Message-ID is one of these (the email a reply at a route address
 * answers), or null: the inbound reader then proves and acts on it within that mailbox (inbound/handle.ts).
 */
export async function answeredMailboxOf(db: Tx, accountId: number, messageIds: string[]) {
  const [row] = await rawQuery<{ mailbox_id: number }>(
    db,
    `SELECT mailbox_id FROM messages WHERE account_id = $1 AND message_id_header = ANY($2::text[]) ORDER BY created_at DESC LIMIT 1`,
    [accountId, messageIds],
  );
  return row ? db.mailbox.findUnique({ where: { id: row.mailbox_id } }) : null;
}
