import { rawQuery, type Db, type Prisma, type Tx } from '../db';
import { idSpan } from '../ids';
import { stopListed } from '../stop-list/repository';
import type { FieldValue } from '../subscribers/schema';

/**
 * The broadcasts' SQL, and nothing else writes it: the broadcast rows, their audience snapshot (broadcast_recipients)
 * and their copies in messages. The named statements ('broadcast-page', 'broadcast-copies') are prepared once per
 * connection on the run's hot path (apps/core/src/db.ts).
 */

/**
 * Active subscribers not paused (the preference page's pause: docs/preferences.md), not suppressed and not on the
 * stop list (the address, its domain or a parent domain).
 */
const ELIGIBLE = `s.status = 'active'
  AND (s.paused_until IS NULL OR s.paused_until <= now())
  AND NOT EXISTS (SELECT 1 FROM suppressions sp WHERE sp.account_id = l.account_id AND sp.email = s.email)
  AND NOT ${stopListed('l.account_id', 's.email')}`;

/** Locks the broadcast row (FOR UPDATE) for the caller's transaction; false when there is no such broadcast. */
export async function lockBroadcast(tx: Tx, id: number): Promise<boolean> {
  const locked = await rawQuery<{ id: number }>(tx, 'SELECT id FROM broadcasts WHERE id = $1 FOR UPDATE', [id]);
  return locked.length > 0;
}

/** Locks the broadcast row (FOR UPDATE) and reads its status; undefined when there is no such broadcast. */
export async function lockBroadcastStatus(tx: Tx, id: number): Promise<string | undefined> {
  const locked = await rawQuery<{ status: string }>(tx, 'SELECT status::text AS status FROM broadcasts WHERE id = $1 FOR UPDATE', [id]);
  return locked[0]?.status;
}

/** Reads the broadcast's status; null when there is no such broadcast. */
export async function broadcastStatus(db: Db, id: number): Promise<string | null> {
  const [row] = await rawQuery<{ status: string }>(db, 'SELECT status::text AS status FROM broadcasts WHERE id = $1', [id]);
  return row?.status ?? null;
}

/** Who of a list a broadcast goes to (broadcasts/segment.ts checks it; audienceCondition below is its one SQL form). */
export interface AudienceRule {
  tags: string[];
  fields?: Record<string, FieldValue | { in: FieldValue[] }>;
  engaged?: { opened?: number; clicked?: number; not_opened?: number; not_clicked?: number };
  subscribedAfter?: Date | null;
  subscribedBefore?: Date | null;
  /** the list's topics (docs/preferences.md): the subscriber is in at least one */
  topics?: string[];
}

/**
 * The ONE rule of a broadcast's audience, as the condition on `s` (subscribers) joined to `l` (lists): the snapshot
 * (snapshotAudience) and the dry run (countAudience) both use it, so the count is what the snapshot takes. Eligible,
 * every tag, each field equal to its value (or to one of `in`, compared as JSON: "1" is not 1), added to the list
 * within the dates, and engagement with an earlier broadcast: opened (a copy's open recorded), clicked (a click that
 * was not a scanner's), not_opened / not_clicked (a copy of it was sent to them, and no such record). Each
 * engagement is a set of subscriber ids read through the broadcast's own rows, so the cost follows that broadcast,
 * not the list. `param` adds a value and answers its placeholder.
 */
function audienceCondition(rule: AudienceRule, param: (value: unknown) => string): string {
  const parts = [`s.tags @> ${param(rule.tags)}::text[]`, ELIGIBLE];
  for (const [name, wanted] of Object.entries(rule.fields ?? {})) {
    const values = typeof wanted === 'object' && wanted !== null ? wanted.in : [wanted];
    parts.push(`(s.fields -> ${param(name)}::text) = ANY(${param(values.map((v) => JSON.stringify(v)))}::jsonb[])`);
  }
  if (rule.subscribedAfter) parts.push(`s.created_at >= ${param(rule.subscribedAfter)}::timestamptz`);
  if (rule.subscribedBefore) parts.push(`s.created_at < ${param(rule.subscribedBefore)}::timestamptz`);
  // in a topic: the subscriber's own choice, else the topic's default (topics/index.ts isIn is the same rule for one person)
  if (rule.topics?.length) {
    parts.push(`EXISTS (SELECT 1 FROM jsonb_array_elements(l.topics) t
      WHERE t->>'id' = ANY(${param(rule.topics)}::text[]) AND COALESCE((s.topics->>(t->>'id'))::boolean, t->>'default' = 'in'))`);
  }
  const engaged = rule.engaged ?? {};
  const sent = (b: number) => `SELECT m.subscriber_id FROM messages m WHERE m.broadcast_id = ${param(b)}::int AND m.status = 'sent'`;
  const opened = 'EXISTS (SELECT 1 FROM message_opens o WHERE o.message_id = m.id)';
  const clicked = 'EXISTS (SELECT 1 FROM link_clicks c WHERE c.message_id = m.id AND NOT c.scanner)';
  if (engaged.opened) parts.push(`s.id IN (${sent(engaged.opened)} AND ${opened})`);
  if (engaged.clicked) parts.push(`s.id IN (${sent(engaged.clicked)} AND ${clicked})`);
  if (engaged.not_opened) parts.push(`s.id IN (${sent(engaged.not_opened)} AND NOT ${opened})`);
  if (engaged.not_clicked) parts.push(`s.id IN (${sent(engaged.not_clicked)} AND NOT ${clicked})`);
  return parts.join('\n  AND ');
}

/** `values` as the statement's parameters from `$<first>` on, and the function audienceCondition adds them with. */
function parameters(values: unknown[]): (value: unknown) => string {
  return (value) => `$${values.push(value)}`;
}

/** Inserts the audience snapshot into broadcast_recipients: the list's subscribers the rule takes (audienceCondition). Answers how many. */
export async function snapshotAudience(tx: Tx, id: number, listId: number, rule: AudienceRule): Promise<number> {
  const values: unknown[] = [id, listId];
  const condition = audienceCondition(rule, parameters(values));
  const inserted = await rawQuery<{ n: number }>(
    tx,
    `WITH snap AS (
             INSERT INTO broadcast_recipients (broadcast_id, subscriber_id)
             SELECT $1, s.id FROM subscribers s JOIN lists l ON l.id = s.list_id
             WHERE s.list_id = $2 AND ${condition}
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT count(*)::int AS n FROM snap`,
    values,
  );
  return inserted[0]!.n;
}

/** Counts the list's subscribers the rule takes now: the dry run of snapshotAudience, with the same condition. */
export async function countAudience(db: Tx, listId: number, rule: AudienceRule): Promise<number> {
  const values: unknown[] = [listId];
  const condition = audienceCondition(rule, parameters(values));
  const [row] = await rawQuery<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM subscribers s JOIN lists l ON l.id = s.list_id WHERE s.list_id = $1 AND ${condition}`,
    values,
  );
  return row!.n;
}

/** Reads which of the field names no subscriber of the list has (a segment naming one is a mistake). */
export async function unknownFields(db: Tx, listId: number, names: string[]): Promise<string[]> {
  if (!names.length) return [];
  const rows = await rawQuery<{ name: string }>(
    db,
    `SELECT f.name FROM unnest($2::text[]) AS f(name)
     WHERE NOT EXISTS (SELECT 1 FROM subscribers s WHERE s.list_id = $1 AND s.fields ? f.name)`,
    [listId, names],
  );
  return rows.map((r) => r.name);
}

/** Reads which of the broadcast ids are not broadcasts of the account. */
export async function foreignBroadcasts(db: Tx, accountId: number, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const rows = await rawQuery<{ id: number }>(
    db,
    `SELECT b.id FROM unnest($2::int[]) AS b(id) WHERE NOT EXISTS (SELECT 1 FROM broadcasts o WHERE o.id = b.id AND o.account_id = $1)`,
    [accountId, ids],
  );
  return rows.map((r) => r.id);
}

export interface PageRow {
  id: number;
  email: string;
  name: string;
  fields: unknown;
  /** still eligible and without a copy */
  due: boolean;
}

/**
 * Reads one keyset page of the snapshot (subscriber ids after `after`), each person with whether a copy is still due.
 * The page's recipients are taken first, on their own (broadcast_recipients' primary key, in order, LIMIT), and only
 * they are looked up in subscribers, each by its primary key: joined first, the plan Postgres kept for the statement
 * (made while the snapshot's rows had no statistics) read every remaining recipient's subscriber and sorted them for
 * each page (28,000 of them for a page at 72,000 of a 100,000 list: a broadcast's pages together n²/2 again). A
 * recipient whose subscriber is gone comes back not due, so the keyset walks past it. A copy is looked for in broadcast_copies (its primary key is the
 * pair), not in messages: messages is partitioned, its (broadcast_id, subscriber_id) index is a plain one beside
 * (broadcast_id, updated_at), and the generic plan, made while the broadcast's partition was nearly empty, took the
 * latter and filtered every copy already written for each person of the page (1 M buffers a page at 10,000 copies).
 */
export function audiencePage(db: Db, id: number, after: number, size: number): Promise<PageRow[]> {
  return rawQuery<PageRow>(
    db,
    `WITH page AS MATERIALIZED (
       SELECT subscriber_id FROM broadcast_recipients WHERE broadcast_id = $1 AND subscriber_id > $2 ORDER BY subscriber_id LIMIT $3
     )
     SELECT r.subscriber_id AS id, s.email, s.name, s.fields,
            (s.id IS NOT NULL AND ${ELIGIBLE} AND NOT EXISTS (SELECT 1 FROM broadcast_copies c WHERE c.broadcast_id = $1 AND c.subscriber_id = s.id)) AS due
     FROM page r
     -- each by its primary key (LIMIT 1 keeps it a lookup a row: joined, a small list's subscribers were read whole)
     LEFT JOIN LATERAL (SELECT * FROM subscribers WHERE id = r.subscriber_id LIMIT 1) s ON true
     LEFT JOIN lists l ON l.id = s.list_id
     ORDER BY r.subscriber_id`,
    [id, after, size],
    'broadcast-page',
  );
}

/** A rendered copy (delivery/outbox.ts messageRow, with its body and its headers as JSON text), as insertCopies writes it. */
export type CopyRow = Pick<Prisma.MessageCreateManyInput, 'id' | 'subscriberId' | 'to' | 'subject' | 'messageIdHeader'> & {
  text: string | null;
  html: string | null;
  headers: string;
  /** an A/B test's variant (ab.ts), null without one */
  variant?: number | null;
};

/**
 * Inserts the copies into messages (enqueued now) while the broadcast, held FOR SHARE, is `sending`; one copy per
 * (broadcast, subscriber), claimed in broadcast_copies first (messages is partitioned: docs/partitions.md), a copy
 * already there is left alone. Answers the ids written.
 */
export async function insertCopies(db: Db, b: { id: number; accountId: number; mailboxId: number }, rows: CopyRow[]): Promise<string[]> {
  const inserted = await rawQuery<{ id: string }>(
    db,
    `WITH b AS (SELECT id FROM broadcasts WHERE id = $1 AND status = 'sending' FOR SHARE),
       v AS (SELECT * FROM unnest($4::uuid[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int[])
               AS v(id, subscriber_id, recipient, subject, text, html, headers, header, variant)),
       claimed AS (INSERT INTO broadcast_copies (broadcast_id, subscriber_id, message_id)
                   SELECT b.id, v.subscriber_id, v.id FROM b, v ON CONFLICT (broadcast_id, subscriber_id) DO NOTHING RETURNING message_id)
       INSERT INTO messages (id, account_id, mailbox_id, kind, broadcast_id, subscriber_id, "to", subject, text, html, headers,
                             message_id_header, variant, enqueued_at)
       SELECT v.id, $2, $3, 'broadcast', b.id, v.subscriber_id, v.recipient, v.subject, v.text, v.html, v.headers::jsonb, v.header, v.variant, now()
       FROM b, v JOIN claimed ON claimed.message_id = v.id
       RETURNING id::text`,
    [
      b.id,
      b.accountId,
      b.mailboxId,
      rows.map((r) => r.id),
      rows.map((r) => r.subscriberId),
      rows.map((r) => r.to),
      rows.map((r) => r.subject),
      rows.map((r) => r.text),
      rows.map((r) => r.html),
      rows.map((r) => r.headers),
      rows.map((r) => r.messageIdHeader),
      rows.map((r) => r.variant ?? null),
    ],
    'broadcast-copies',
  );
  return inserted.map((r) => r.id);
}

/** The ids among these still waiting for a worker (queued or sending). */
export async function stillWaiting(db: Db, ids: string[]): Promise<string[]> {
  const rows = await rawQuery<{ id: string }>(db, `SELECT id::text FROM messages WHERE id = ANY($1::uuid[]) AND id BETWEEN $2::uuid AND $3::uuid AND status IN ('queued', 'sending')`, [ids, ...idSpan(ids)]);
  return rows.map((r) => r.id);
}

/** Reads the ids of the broadcast's queued copies after `after`, in id order, at most `limit`. */
export function queuedCopiesAfter(db: Db, id: number, after: string, limit: number): Promise<{ id: string }[]> {
  return rawQuery<{ id: string }>(
    db,
    `SELECT id::text FROM messages WHERE broadcast_id = $1 AND status = 'queued' AND id > $2::uuid ORDER BY id LIMIT $3`,
    [id, after, limit],
  );
}

/** Counts the broadcast's copies by status: sent, failed (bounced included), cancelled, pending (not final) and all. */
export async function copyCounts(db: Tx, id: number): Promise<{ sent: number; failed: number; cancelled: number; pending: number; copies: number }> {
  const [row] = await rawQuery<{ sent: number; failed: number; cancelled: number; pending: number; copies: number }>(
    db,
    `SELECT count(*) FILTER (WHERE status = 'sent')::int AS sent,
            count(*) FILTER (WHERE status IN ('failed', 'bounced'))::int AS failed,
            count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
            count(*) FILTER (WHERE status IN ('queued', 'sending', 'deferred'))::int AS pending,
            count(*)::int AS copies
     FROM messages WHERE broadcast_id = $1`,
    [id],
  );
  return row!;
}

/** Deletes the broadcast's copies not yet claimed by a worker (queued or deferred): a resume writes them again. */
export async function deleteUnclaimedCopies(tx: Tx, id: number): Promise<void> {
  await rawQuery(tx, `DELETE FROM messages WHERE broadcast_id = $1 AND status IN ('queued', 'deferred')`, [id]);
}

/** Cancels the person's broadcast copies and series steps not yet claimed by a worker (queued or deferred): they left the list. */
export async function cancelUnclaimedCopiesOf(db: Db, subscriberId: number): Promise<void> {
  await rawQuery(
    db,
    `UPDATE messages SET status = 'cancelled', last_error = 'the person unsubscribed', updated_at = now()
     WHERE subscriber_id = $1 AND kind IN ('broadcast', 'series') AND status IN ('queued', 'deferred')`,
    [subscriberId],
  );
}

/**
 * Cancels the person's broadcast copies not yet claimed by a worker whose broadcast has topics and every one of them
 * among `topics` (they just left those topics: docs/preferences.md), or, with `topics` null, every such broadcast copy
 * (they paused). Series steps are left: a written step goes out (a paused person's next ones wait).
 */
export async function cancelUnclaimedBroadcastCopiesOf(db: Tx, subscriberId: number, topics: string[] | null, reason: string): Promise<void> {
  await rawQuery(
    db,
    `UPDATE messages m SET status = 'cancelled', last_error = $3, updated_at = now()
     FROM broadcasts b
     WHERE m.broadcast_id = b.id AND m.subscriber_id = $1 AND m.kind = 'broadcast' AND m.status IN ('queued', 'deferred')
       AND ($2::text[] IS NULL OR (cardinality(b.topics) > 0 AND b.topics <@ $2::text[]))`,
    [subscriberId, topics, reason],
  );
}

/** Reads a sending broadcast for the auto-pause check (outreach/auto-pause.ts); undefined when it is not sending. */
export async function sendingBroadcast(tx: Tx, id: number): Promise<{ id: number; account_id: number; subject: string; window_since: Date | null } | undefined> {
  const [b] = await rawQuery<{ id: number; account_id: number; subject: string; window_since: Date | null }>(
    tx,
    `SELECT id, account_id, subject, window_since FROM broadcasts WHERE id = $1 AND status = 'sending'`,
    [id],
  );
  return b;
}

/** Pauses a sending broadcast with the service's reason; false when it was no longer sending. */
export async function pauseSendingBroadcast(tx: Tx, id: number, reason: string): Promise<boolean> {
  const paused = await rawQuery(tx, `UPDATE broadcasts SET status = 'paused', paused_reason = $2, updated_at = now() WHERE id = $1 AND status = 'sending' RETURNING id`, [id, reason]);
  return paused.length > 0;
}

// ---- A/B tests (ab.ts) ----

/** Per variant of a broadcast: the copies written, and of them those answered by a person and those clicked by one. */
export function broadcastArms(db: Tx, broadcastId: number): Promise<{ variant: number; sent: number; replied: number; clicked: number }[]> {
  return rawQuery<{ variant: number; sent: number; replied: number; clicked: number }>(
    db,
    `SELECT m.variant, count(*)::int AS sent,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM inbound_messages i WHERE i.related_id = m.id AND i.kind = 'reply'))::int AS replied,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM link_clicks c WHERE c.message_id = m.id AND NOT c.scanner))::int AS clicked
     FROM messages m WHERE m.broadcast_id = $1 AND m.variant IS NOT NULL AND m.status <> 'cancelled'
     GROUP BY m.variant ORDER BY m.variant`,
    [broadcastId],
  );
}
