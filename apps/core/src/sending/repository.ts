import type { Prisma } from '../../../../generated/prisma/client';
import { rawQuery, type Db, type Tx } from '../db';
import { IDEMPOTENCY_TTL_MS } from '../idempotency';
import { idSpan, sendCopiesFloor } from '../ids';
import { stopListed } from '../stop-list/repository';
import type { SendRequest } from './schema';

/** The SQL of sending: the accepted sends' one write, and the statuses `Prefer: wait` reads. */

/** Why a recipient is left out of a send: the account's suppression list (bounced, complained) or its stop list. */
export type SkipReason = 'bounced' | 'complained' | 'stopped';

/** One accepted send as WRITE_SENDS writes it (write.ts batches them). */
export interface SendToWrite {
  key: { id: number; accountId: number; dailyLimit: number };
  mailbox: { id: number; address: string };
  request: SendRequest & { fromName: string };
  sendId: string;
  idempotencyRecord: number | undefined;
  /** the template versions its content was rendered from (templates/cache.ts); checked by the write */
  templates?: { id: number; version: number }[];
  /** a message submitted over SMTP: its MIME, delivered as written (submission/mime.ts) */
  raw?: Buffer;
  /** and its header From's address as the submission parsed it: the domain DKIM signs with at delivery */
  headerFrom?: string;
  /** and the Message-ID it carries: every copy is stored with it (a report quoting it finds the copy) */
  messageIdHeader?: string;
  /**
   * The key of the send's idempotency record, taken by the write itself (a message submitted over SMTP, keyed by its
   * Message-ID): the send is written only if the key is free, and its record carries the send's answer from then on.
   */
  claim?: SendClaim;
}

/** An idempotency key of the send's API key (`route` and `key` as in IdempotencyScope) and its fingerprint. */
export interface SendClaim {
  route: string;
  key: string;
  fingerprint: string;
}

/** What WRITE_CLAIMED_SENDS has beyond WRITE_SENDS (writeSendsStatement): the sends' keys, taken first. */
const CLAIMS = `claimed AS (
  -- the free keys of the sends' claims, taken in key order (the first send of a key repeated in the batch takes it),
  -- each record carrying its send's answer ($27: when it expires)
  INSERT INTO idempotency_records (api_key_id, route, key, fingerprint, expires_at, response_status, response_body)
  SELECT s.key_id, s.claim_route, s.claim_key, s.claim_fingerprint, $27::timestamptz, 202,
         jsonb_build_object('ok', true, 'id', s.id::text, 'status', 'queued')
  FROM s WHERE s.claim_key IS NOT NULL
  ORDER BY s.key_id, s.claim_route, s.claim_key, s.ord
  ON CONFLICT (api_key_id, route, key) DO NOTHING
  RETURNING id, (response_body->>'id')::uuid AS send_id
), unclaimed AS (
  -- the sends whose key was held: written by nobody
  SELECT s.ord FROM s WHERE s.claim_key IS NOT NULL AND s.id NOT IN (SELECT send_id FROM claimed)
), `;

/**
 * Everything accepted sends do to Postgres, as ONE statement for a whole batch of sends, so one round trip and one
 * atomic commit:
 * 1. each recipient is checked against its account's suppression list (bounced, complained) and stop list (the
 *    address, or its domain or a parent domain: stop-list/repository.ts): those go to the
 *    send's `skipped`, in request order;
 * 2. per key, the kept copies of all its sends in the batch are counted against the key's usage for today, only if
 *    they all stay within the limit (the usage rows are locked in key order, so two batches cannot deadlock);
 * 3. the Send, one Message per kept recipient, and the answer an Idempotency-Key will replay.
 * A send with a claim (a submitted message's Message-ID: WRITE_CLAIMED_SENDS, the statement with CLAIMS) first takes
 * its key's record, which carries its answer from then on: only one send of a key is written, however many statements
 * carry it at once, and a send whose key was held writes nothing (`claimed` null: the caller reads the earlier record).
 * The keys are taken in key order, before any usage row is locked, so two statements cannot deadlock. A claimed send
 * refused by a later step leaves its record `processing`: the caller frees it (releaseIdempotent).
 * A send rendered from stored templates is written only while each version it rendered is still the template's
 * (`stale` otherwise, and nothing written: the caller renders again): the API's cache of templates costs no query.
 * Each step reads the one before it, so a send with nobody kept, or whose key's sends would pass the limit, writes
 * nothing at all. `used` is each send's count as if its key's sends had been written one by one in batch order.
 * The copies are written already marked enqueued (the caller queues them right after); if Redis refuses the jobs the
 * caller clears the mark, and a crash in between leaves a mark the reconciler treats as stale after five minutes.
 */
function writeSendsStatement(claims: boolean): string {
  return `
WITH s AS (
  -- the batch's sends, one row each: $2 to $19 (and $24 to $26 with claims), one array a column (writeSendsValues)
  SELECT * FROM unnest($2::uuid[], $3::int[], $4::int[], $5::int[], $6::int[], $7::text[], $8::text[], $9::text[],
                       $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::timestamptz[], $16::int[], $17::text[], $18::bytea[], $19::text[]
                       ${claims ? ', $24::text[], $25::text[], $26::text[]' : ''})
    WITH ORDINALITY AS s(id, account_id, key_id, daily_limit, mailbox_id, from_name, reply_to, subject, text, html,
                         headers, attachments, metadata, send_at, idempotency_id, templates, raw, header_from,
                         ${claims ? 'claim_route, claim_key, claim_fingerprint, ' : ''}ord)
), ${claims ? CLAIMS : ''}stale AS (
  -- the sends rendered from a template version that is no longer the template's: written by nobody
  SELECT s.ord FROM s, jsonb_to_recordset(s.templates::jsonb) AS t(id int, version int)
  WHERE s.templates IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM templates c WHERE c.id = t.id AND c.account_id = s.account_id AND c.version = t.version)
), verdict AS (
  -- each recipient ($20 to $23: its send's position, its row's id, its address and Message-ID) with why it is left
  -- out, if it is: the suppression list, then the stop list
  SELECT c.*, COALESCE(
    (SELECT sp.reason::text FROM suppressions sp WHERE sp.account_id = s.account_id AND sp.email = c.recipient),
    CASE WHEN ${stopListed('s.account_id', 'c.recipient')} THEN 'stopped' END) AS reason
  FROM unnest($20::int[], $21::uuid[], $22::text[], $23::text[]) WITH ORDINALITY AS c(send_ord, id, recipient, header, ord)
  JOIN s ON s.ord = c.send_ord
), skipped AS (
  -- each send's recipients left out, in request order (the answer's skipped)
  SELECT send_ord, json_agg(json_build_object('to', recipient, 'reason', reason) ORDER BY ord) AS list
  FROM verdict WHERE reason IS NOT NULL GROUP BY send_ord
), wanted AS (
  -- each send's kept copies, unless it is stale or its key was held
  SELECT s.ord, s.key_id, count(*)::int AS n
  FROM s JOIN verdict v ON v.send_ord = s.ord AND v.reason IS NULL
  WHERE s.ord NOT IN (SELECT ord FROM stale)${claims ? ' AND s.ord NOT IN (SELECT ord FROM unclaimed)' : ''}
  GROUP BY s.ord, s.key_id
), per_key AS (
  -- the kept copies of each key's sends together, against its daily limit
  SELECT w.key_id, min(s.daily_limit) AS daily_limit, sum(w.n)::int AS n FROM wanted w JOIN s ON s.ord = w.ord GROUP BY w.key_id
), usage AS (
  -- today's count of each key whose sends all fit, locked in key order (two batches cannot deadlock)
  INSERT INTO key_daily_usage (api_key_id, day, count)
  SELECT key_id, $1::date, n FROM per_key WHERE n <= daily_limit ORDER BY key_id
  ON CONFLICT (api_key_id, day) DO UPDATE SET count = key_daily_usage.count + EXCLUDED.count
  WHERE key_daily_usage.count + EXCLUDED.count <= (SELECT k.daily_limit FROM per_key k WHERE k.key_id = EXCLUDED.api_key_id)
  RETURNING api_key_id, count
), accepted AS (
  -- each written send's count, as if its key's sends had been written one by one in batch order
  SELECT w.ord, (u.count - (sum(w.n) OVER (PARTITION BY w.key_id ORDER BY w.ord DESC) - w.n))::int AS used
  FROM wanted w JOIN usage u ON u.api_key_id = w.key_id
), send AS (
  -- the Send rows
  INSERT INTO sends (id, account_id, api_key_id, from_name, reply_to, subject, text, html, headers, attachments, metadata, skipped, send_at, raw, header_from)
  SELECT s.id, s.account_id, s.key_id, s.from_name, s.reply_to, s.subject, s.text, s.html, s.headers::jsonb,
         s.attachments::jsonb, s.metadata::jsonb, coalesce(sk.list, '[]'::json)::jsonb, s.send_at, s.raw, s.header_from
  FROM s JOIN accepted a ON a.ord = s.ord LEFT JOIN skipped sk ON sk.send_ord = s.ord
  RETURNING 1
), copies AS (
  -- a Message row per kept recipient, already marked enqueued
  INSERT INTO messages (id, account_id, mailbox_id, kind, send_id, "to", subject, message_id_header, not_before, enqueued_at)
  SELECT v.id, s.account_id, s.mailbox_id, 'transactional', s.id, v.recipient, s.subject, v.header, s.send_at, now()
  FROM verdict v JOIN s ON s.ord = v.send_ord JOIN accepted a ON a.ord = s.ord
  WHERE v.reason IS NULL
  RETURNING 1
), answered AS (
  -- the answer an Idempotency-Key replays
  UPDATE idempotency_records r SET state = 'done', response_status = 202, response_body = json_build_object(
    'ok', true, 'id', s.id::text, 'status', 'queued',
    'messages', (SELECT json_agg(json_build_object('id', v.id::text, 'to', v.recipient, 'status', 'queued') ORDER BY v.ord)
                 FROM verdict v WHERE v.send_ord = s.ord AND v.reason IS NULL),
    'skipped', coalesce(sk.list, '[]'::json))::jsonb
  FROM s JOIN accepted a ON a.ord = s.ord LEFT JOIN skipped sk ON sk.send_ord = s.ord
  WHERE r.id = s.idempotency_id
  RETURNING 1
)
-- one row per send, in order: its count (null: over the limit), its recipients left out, whether it was stale, and the
-- record its claim took (null: its key was held; no claim: null too)
SELECT s.ord::int, a.used, coalesce(sk.list, '[]'::json) AS skipped, s.ord IN (SELECT ord FROM stale) AS stale,
       ${claims ? '(SELECT c.id FROM claimed c WHERE c.send_id = s.id)' : 'NULL::int'} AS claimed
FROM s LEFT JOIN accepted a ON a.ord = s.ord LEFT JOIN skipped sk ON sk.send_ord = s.ord
ORDER BY s.ord`;
}

/** WRITE_SENDS without claims (POST /send, batches) and with them (SMTP submission): the API's statement plans no claim. */
const WRITE_SENDS = writeSendsStatement(false);
const WRITE_CLAIMED_SENDS = writeSendsStatement(true);

/**
 * A send's row of WRITE_SENDS or WRITE_CLAIMED_SENDS: its count for the key today (null: over the limit), the recipients left out, and the id
 * of the record its claim took (null when its key was held, or it had no claim).
 */
export type WrittenSend = { ord: number; used: number | null; skipped: { to: string; reason: SkipReason }[]; stale: boolean; claimed: number | null };

/**
 * Runs WRITE_SENDS for a batch of sends (`day`: today, UTC, as YYYY-MM-DD; `copies`: each recipient's Message row
 * with the 1-based position of its send): checks, counts against the keys' limits and inserts the sends, their copies
 * and the idempotency answers. One row per send, in order.
 */
export async function insertAcceptedSends(
  db: Db,
  day: string,
  sends: SendToWrite[],
  copies: { send: number; row: Prisma.MessageCreateManyInput }[],
): Promise<WrittenSend[]> {
  const claims = sends.some((s) => s.claim);
  // planned once per connection (db.ts planOnce): a batch of one send costs its execution, not its planning too
  return rawQuery<WrittenSend>(db, claims ? WRITE_CLAIMED_SENDS : WRITE_SENDS, writeSendsValues(day, sends, copies, claims), claims ? 'write-claimed-sends' : 'write-sends', 'once');
}

/**
 * WRITE_SENDS's 23 parameters, in their order: the day, the sends' columns (`s`), the copies' columns (`c`); with
 * `claims`, WRITE_CLAIMED_SENDS's 4 more: the sends' claims (more columns of `s`) and the claims' expiry.
 */
function writeSendsValues(day: string, sends: SendToWrite[], copies: { send: number; row: Prisma.MessageCreateManyInput }[], claims: boolean): unknown[] {
  const column = <T>(pick: (send: SendToWrite) => T) => sends.map(pick);
  const values = [
    // $1: today (UTC), the day of the keys' usage rows
    day,
    // $2 to $19: one array per column of `s`, a send an element
    column((s) => s.sendId), // id
    column((s) => s.key.accountId), // account_id
    column((s) => s.key.id), // key_id
    column((s) => s.key.dailyLimit), // daily_limit
    column((s) => s.mailbox.id), // mailbox_id
    column((s) => s.request.fromName), // from_name
    column((s) => s.request.replyTo ?? null), // reply_to
    column((s) => s.request.subject), // subject
    column((s) => s.request.text ?? null), // text
    column((s) => s.request.html ?? null), // html
    column((s) => JSON.stringify(s.request.headers ?? {})), // headers
    column((s) => JSON.stringify(s.request.attachments ?? [])), // attachments
    column((s) => JSON.stringify(s.request.metadata ?? {})), // metadata
    column((s) => s.request.sendAt ?? null), // send_at
    column((s) => s.idempotencyRecord ?? null), // idempotency_id
    column((s) => (s.templates ? JSON.stringify(s.templates) : null)), // templates: the versions rendered from
    byteaArray(column((s) => s.raw ?? null)), // raw: a submitted message's MIME
    column((s) => s.headerFrom ?? null), // header_from
    // $20 to $23: one array per column of `c`, a recipient an element
    copies.map((c) => c.send), // send_ord: its send's 1-based position
    copies.map((c) => c.row.id), // id: its Message row's
    copies.map((c) => c.row.to), // recipient
    copies.map((c) => c.row.messageIdHeader), // header: its Message-ID
  ];
  if (!claims) return values;
  return [
    ...values,
    // $24 to $26: the claims, more columns of `s` (null: the send has none)
    column((s) => s.claim?.route ?? null), // claim_route
    column((s) => s.claim?.key ?? null), // claim_key
    column((s) => s.claim?.fingerprint ?? null), // claim_fingerprint
    // $27: when the records the claims take expire
    new Date(Date.now() + IDEMPOTENCY_TTL_MS),
  ];
}

/**
 * A bytea[] parameter in Postgres's binary array format (array_recv): pg sends a Buffer as a binary parameter, so the
 * MIME of a message goes as its own bytes. As text it went base64 in a text array literal: three copies a third larger
 * than the message in the SMTP process, and a parse and a decode in Postgres (bench/smtp.ts, 1 MB messages).
 */
function byteaArray(values: (Buffer | null)[]): Buffer {
  const out = Buffer.allocUnsafe(20 + values.reduce((n, v) => n + 4 + (v?.length ?? 0), 0));
  out.writeInt32BE(1, 0); // one dimension
  out.writeInt32BE(values.includes(null) ? 1 : 0, 4);
  out.writeInt32BE(17, 8); // the elements' type: bytea
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16); // the lower bound
  let offset = 20;
  for (const value of values) {
    offset = out.writeInt32BE(value ? value.length : -1, offset);
    if (value) offset += value.copy(out, offset);
  }
  return out;
}

/** Reads the status of each of the messages (by id): the rows found. */
export async function messageStatuses(db: Tx, ids: string[]): Promise<{ id: string; status: string }[]> {
  return rawQuery<{ id: string; status: string }>(db, 'SELECT id::text, status::text FROM messages WHERE id = ANY($1::uuid[]) AND id BETWEEN $2::uuid AND $3::uuid', [ids, ...idSpan(ids)], 'wait-statuses');
}

// ---- a send as GET /api/v1/send/:id answers it (accept.ts findSend) ----

/** A send of the account with its copies, in the order they were written; none when it is not the account's. */
export interface SendWithCopies {
  id: string;
  skipped: unknown;
  send_at: Date | null;
  copies: { id: string; to: string; status: string; bounce: unknown; message_id: string }[];
}

/**
 * The send and its copies in one statement, one round trip: the status lookup programs poll. The copies are read from
 * the send's month on (`id >= $3`, ids/sendCopiesFloor): the partitions before it are left out when the statement is
 * planned (Postgres plans this one for each execution, its parameters known), or when an execution starts under a
 * generic plan.
 */
export async function sendWithCopies(db: Tx, accountId: number, sendId: string): Promise<SendWithCopies | undefined> {
  const [send] = await rawQuery<SendWithCopies>(
    db,
    `SELECT s.id::text, s.skipped, s.send_at,
            coalesce((SELECT json_agg(json_build_object('id', m.id::text, 'to', m."to", 'status', m.status::text, 'bounce', m.bounce,
                                                        'message_id', m.message_id_header) ORDER BY m.created_at, m.id)
                      FROM messages m WHERE m.send_id = s.id AND m.id >= $3::uuid), '[]'::json) AS copies
     FROM sends s WHERE s.id = $1::uuid AND s.account_id = $2`,
    [sendId, accountId, sendCopiesFloor(sendId)],
    'send-with-copies',
  );
  return send;
}

// ---- cancel and reschedule (cancel.ts) ----

/** A send's copy as its cancel or reschedule sees it, locked. */
export interface LockedCopy {
  id: string;
  status: string;
}

/**
 * Locks the send's copies (FOR UPDATE, in id order) and reads their statuses. The delivery's claim takes a row by an
 * UPDATE that requires queued or deferred (delivery/repository.ts CLAIM_UNGUARDED), so a claim either came first (the
 * copy is `sending` here) or waits for this transaction and then finds the copy cancelled or moved.
 */
export function lockSendCopies(tx: Tx, sendId: string): Promise<LockedCopy[]> {
  return rawQuery<LockedCopy>(tx, 'SELECT id::text, status::text FROM messages WHERE send_id = $1::uuid AND id >= $2::uuid ORDER BY id FOR UPDATE', [sendId, sendCopiesFloor(sendId)]);
}

/** Cancels the send's copies not yet claimed (queued or deferred); answers their ids. */
export async function cancelUnclaimedCopies(tx: Tx, sendId: string): Promise<string[]> {
  const rows = await rawQuery<{ id: string }>(
    tx,
    `UPDATE messages SET status = 'cancelled', last_error = 'cancelled by the sender', locked_until = NULL, updated_at = now()
     WHERE send_id = $1::uuid AND id >= $2::uuid AND status IN ('queued', 'deferred') RETURNING id::text`,
    [sendId, sendCopiesFloor(sendId)],
  );
  return rows.map((r) => r.id);
}

/** Moves the send and its queued copies to `at` (null: now). */
export async function moveSend(tx: Tx, sendId: string, at: Date | null): Promise<void> {
  await rawQuery(tx, 'UPDATE sends SET send_at = $2 WHERE id = $1::uuid', [sendId, at]);
  await rawQuery(tx, `UPDATE messages SET not_before = $2, updated_at = now() WHERE send_id = $1::uuid AND id >= $3::uuid AND status = 'queued'`, [sendId, at, sendCopiesFloor(sendId)]);
}

/**
 * The recipients of a send that the account's suppression list (bounced, complained) or stop list leaves out, in the
 * order given: a test send is checked as a live one (WRITE_SENDS above, step 1).
 */
export function skippedRecipients(tx: Tx, accountId: number, recipients: string[]): Promise<{ to: string; reason: SkipReason }[]> {
  return rawQuery<{ to: string; reason: SkipReason }>(
    tx,
    `SELECT v.recipient AS "to", v.reason FROM (
       SELECT c.recipient, c.ord, COALESCE(
         (SELECT sp.reason::text FROM suppressions sp WHERE sp.account_id = $1 AND sp.email = c.recipient),
         CASE WHEN ${stopListed('$1', 'c.recipient')} THEN 'stopped' END) AS reason
       FROM unnest($2::text[]) WITH ORDINALITY AS c(recipient, ord)
     ) v WHERE v.reason IS NOT NULL ORDER BY v.ord`,
    [accountId, recipients],
  );
}
