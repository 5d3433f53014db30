import { rawQuery, type Db, type Tx } from '../db';
import { subscribed } from '../events/repository';
import { startSeriesSql } from '../lifecycle/repository';
import { recordConsentSql } from '../consent/repository';

/**
 * The subscribers' SQL, and nothing else writes it: subscriptions, their confirmation tokens and the suppressions
 * that refuse them. Typed Prisma calls stay in the modules that use them.
 */

/**
 * What becoming active entails, as CTEs over `activated` (a relation of the people just made active: id, list_id,
 * account_id, list_key, email, and their ledger row's consent_kind, consent_source, consent_ip, consent_form_text,
 * consent_detail), in this order (activate.ts says why each):
 * - locked, counted: the lists' rows locked in id order (after the subscribers': the state machine's lock order), and
 *   their subscriber_count moved once per list;
 * - started: the list's welcome series (lifecycle/repository.ts startSeriesSql: once per person);
 * - ledger: the consent ledger's row;
 * - announced: `subscriber.confirmed` (list key, email, status: docs/webhooks.md), if an endpoint wants it.
 * Run for one person by recordActivation, and inside the one-statement add (FAST_ADD).
 */
const becameActiveSql = (activated: string) => `
  locked AS (
    SELECT l.id FROM lists l WHERE l.id IN (SELECT list_id FROM ${activated}) ORDER BY l.id FOR NO KEY UPDATE
  ), counted AS (
    UPDATE lists l SET subscriber_count = l.subscriber_count + c.n
    FROM (SELECT a.list_id, count(*)::int AS n FROM ${activated} a JOIN locked k ON k.id = a.list_id GROUP BY a.list_id) c
    WHERE l.id = c.list_id
    RETURNING 1
  ), started AS (${startSeriesSql(activated)}
  ), ledger AS (${recordConsentSql(activated, 'r.consent_kind', 'r.consent_source', 'r.consent_ip', 'r.consent_detail', 'r.consent_form_text')}
  ), announced AS (
    INSERT INTO events (account_id, type, data)
    SELECT a.account_id, 'subscriber.confirmed', jsonb_build_object('list', a.list_key, 'email', a.email, 'status', 'active')
    FROM ${activated} a WHERE ${subscribed('a.account_id', `'subscriber.confirmed'`)}
    RETURNING 1
  )`;

/** becameActiveSql for one person, the values its parameters. */
const RECORD_ACTIVATION = `
WITH activated AS (
  SELECT $1::int AS id, $2::int AS list_id, $3::int AS account_id, $4::text AS list_key, $5::text AS email,
    $6::text AS consent_kind, $7::text AS consent_source, $8::text AS consent_ip, $9::text AS consent_form_text, $10::jsonb AS consent_detail
), ${becameActiveSql('activated')}
SELECT 1`;

/** What becoming active entails (becameActiveSql) for one subscriber whose row the caller has just made active. */
export async function recordActivation(
  tx: Tx,
  a: { id: number; listId: number; accountId: number; listKey: string; email: string; kind: string; source: string; ip: string; formText: string; detail: Record<string, unknown> },
): Promise<void> {
  await rawQuery(
    tx,
    RECORD_ACTIVATION,
    [a.id, a.listId, a.accountId, a.listKey, a.email, a.kind, a.source, a.ip, a.formText, JSON.stringify(a.detail)],
    'record-activation',
  );
}

/**
 * The common add in ONE statement (fast-add.ts): finds the list by its key within the account, refuses a suppressed
 * address (the suppression list, or bounced or complained on any list of the account: the rule of isSuppressed),
 * inserts the person as active, and does what becoming active entails (becameActiveSql above: the lists' counts
 * once per batch, the welcome series, the consent ledger, the `subscriber.confirmed` event). Every other case (the
 * person is on the list already, a confirmation email is due, the same person twice in one batch) answers null.
 */
const FAST_ADD = `
WITH i AS (
  SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::jsonb[], $7::bool[], $8::int[])
    WITH ORDINALITY AS i(account_id, list_key, email, name, tags, fields, confirmed, key_id, ord)
), r AS (
  SELECT i.*, l.id AS list_id, (NOT l.confirm OR i.confirmed) AS activate,
    i.ord = min(i.ord) OVER (PARTITION BY l.id, i.email) AS first,
    (sp.hit IS NOT NULL OR bad.hit IS NOT NULL) AS suppressed
  FROM i LEFT JOIN lists l ON l.key = i.list_key AND l.account_id = i.account_id
  -- one index probe per address (LATERAL ... LIMIT 1): as EXISTS, a plan made while the tables were small hashed the
  -- whole subscribers and suppressions tables for every batch, and kept doing so as they grew
  LEFT JOIN LATERAL (SELECT 1 AS hit FROM suppressions sp WHERE sp.account_id = i.account_id AND sp.email = i.email LIMIT 1) sp ON true
  LEFT JOIN LATERAL (SELECT 1 AS hit FROM subscribers s JOIN lists sl ON sl.id = s.list_id
                     WHERE sl.account_id = i.account_id AND s.email = i.email AND s.status IN ('bounced', 'complained') LIMIT 1) bad ON true
), added AS (
  INSERT INTO subscribers (list_id, email, name, tags, fields, status, confirmed_at)
  SELECT list_id, email, name, ARRAY(SELECT jsonb_array_elements_text(tags)), fields, 'active', now()
  FROM r WHERE list_id IS NOT NULL AND activate AND first AND NOT suppressed
  ORDER BY list_id, email
  ON CONFLICT (list_id, email) DO NOTHING
  RETURNING id, list_id, email
), activated AS (
  -- what becoming active entails (becameActiveSql): the count, the welcome series, the ledger, the event
  SELECT a.id, a.list_id, r.account_id, r.list_key, a.email, 'subscribe' AS consent_kind, 'api_key' AS consent_source,
    '' AS consent_ip, '' AS consent_form_text, jsonb_build_object('status', 'active', 'key', r.key_id) AS consent_detail
  FROM added a JOIN r ON r.list_id = a.list_id AND r.email = a.email AND r.first
), ${becameActiveSql('activated')}
SELECT r.ord::int,
  CASE WHEN r.list_id IS NULL THEN 'no_list' WHEN r.suppressed THEN 'suppressed' WHEN a.id IS NOT NULL THEN 'active' END AS outcome
FROM r LEFT JOIN added a ON a.list_id = r.list_id AND a.email = r.email AND r.first
ORDER BY r.ord`;

/** What one add through FAST_ADD became: active, refused as suppressed, no such list, or null (the state machine's turn). */
export type FastAddOutcome = 'active' | 'suppressed' | 'no_list' | null;

/** One add that FAST_ADD takes (fast-add.ts batches them). */
export interface FastAdd {
  accountId: number;
  listKey: string;
  email: string;
  name: string;
  tags: string[];
  fields: Record<string, unknown>;
  confirmed: boolean;
  /** the API key that asked, for the consent ledger */
  keyId?: number | null;
}

/** Adds a batch of people in one statement (FAST_ADD above); answers each add's outcome, in order. */
export async function fastAddRows(db: Db, adds: FastAdd[]): Promise<FastAddOutcome[]> {
  const column = <T>(pick: (add: FastAdd) => T) => adds.map(pick);
  const rows = await rawQuery<{ ord: number; outcome: FastAddOutcome }>(
    db,
    FAST_ADD,
    [
      column((a) => a.accountId),
      column((a) => a.listKey),
      column((a) => a.email),
      column((a) => a.name),
      column((a) => JSON.stringify(a.tags)),
      column((a) => JSON.stringify(a.fields)),
      column((a) => a.confirmed),
      column((a) => a.keyId ?? null),
    ],
    'fast-add-subscribers',
    // planned once per connection (db.ts planOnce): a lone sign-up costs its execution, not its planning too
    'once',
  );
  return rows.map((r) => r.outcome);
}

/** Inserts the person into the list as pending; answers the new row's id, undefined when they are on the list already. */
export async function insertPending(tx: Tx, listId: number, email: string): Promise<number | undefined> {
  const inserted = await tx.$queryRaw<{ id: number }[]>`
    INSERT INTO subscribers (list_id, email, status) VALUES (${listId}, ${email}, 'pending')
    ON CONFLICT (list_id, email) DO NOTHING RETURNING id`;
  return inserted[0]?.id;
}

/** Locks the list's subscriber at this address (FOR UPDATE) and answers its id; undefined when there is none. */
export async function lockSubscriberAt(tx: Tx, listId: number, email: string): Promise<number | undefined> {
  const rows = await tx.$queryRaw<{ id: number }[]>`SELECT id FROM subscribers WHERE list_id = ${listId} AND email = ${email} FOR UPDATE`;
  return rows[0]?.id;
}

/** Locks the subscriber row (FOR UPDATE). */
export async function lockSubscriber(tx: Tx, id: number): Promise<void> {
  await tx.$queryRaw`SELECT id FROM subscribers WHERE id = ${id} FOR UPDATE`;
}

/** Locks (FOR UPDATE OF s, in id order) the account's pending and active subscriptions of this address, in every list. */
export function lockLiveSubscriptions(tx: Tx, accountId: number, address: string): Promise<{ id: number; list_id: number; status: string }[]> {
  return tx.$queryRaw<{ id: number; list_id: number; status: string }[]>`
    SELECT s.id, s.list_id, s.status::text AS status FROM subscribers s JOIN lists l ON l.id = s.list_id
    WHERE l.account_id = ${accountId} AND s.email = ${address} AND s.status IN ('pending', 'active')
    ORDER BY s.id FOR UPDATE OF s`;
}

/** Reads whether the address is suppressed in the account: on the suppression list, or bounced or complained on any of its lists. */
export async function suppressedInAccount(tx: Tx, accountId: number, email: string): Promise<boolean> {
  const [row] = await tx.$queryRaw<{ suppressed: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM suppressions WHERE account_id = ${accountId} AND email = ${email})
        OR EXISTS (SELECT 1 FROM subscribers s JOIN lists l ON l.id = s.list_id
                   WHERE l.account_id = ${accountId} AND s.email = ${email} AND s.status IN ('bounced', 'complained'))
        AS suppressed`;
  return row?.suppressed === true;
}

/** Spends the confirmation token of this hash when it is unused and not expired; answers its subscriber, undefined otherwise. */
export async function spendToken(tx: Tx, hash: string, now: Date): Promise<number | undefined> {
  const spent = await tx.$queryRaw<{ subscriber_id: number }[]>`
      UPDATE confirmation_tokens SET used_at = ${now}
      WHERE token_hash = ${hash} AND used_at IS NULL AND expires_at > ${now}
      RETURNING subscriber_id`;
  return spent[0]?.subscriber_id;
}

/** What a search across lists looks for (subscribers/search.ts reads it from the box). */
export type SubscriberQuery = { kind: 'address'; text: string } | { kind: 'field'; field: string; value: string } | { kind: 'tag'; tag: string };

/** Subscribers of any list matching the search (subscribers/search.ts), newest first, below the id `before`. */
export async function subscriberHitRows(db: Tx, q: SubscriberQuery, before: number, limit: number) {
  const [match, values]: [string, unknown[]] =
    q.kind === 'tag' ? ['$1 = ANY(s.tags)', [q.tag]] : q.kind === 'field' ? ['s.fields ->> $1 = $2', [q.field, q.value]] : ['s.email LIKE $1', [`%${q.text.replace(/[\\%_]/g, '\\$&')}%`]];
  const n = values.length;
  return rawQuery<{ id: number; email: string; name: string; status: string; tags: string[]; created_at: Date; list_id: number; list_name: string; account: number }>(
    db,
    `SELECT s.id, s.email, s.name, s.status::text AS status, s.tags, s.created_at, l.id AS list_id, l.name AS list_name, l.account_id AS account
     FROM subscribers s JOIN lists l ON l.id = s.list_id
     WHERE ${match} AND s.id < $${n + 1} ORDER BY s.id DESC LIMIT $${n + 2}`,
    [...values, before, limit],
  );
}

/** Every subscription in the subscriber's account with the same address (theirs included). */
export async function sameAddressRows(db: Tx, id: number) {
  return rawQuery<{ id: number; list_id: number; list_name: string; status: string; created_at: Date }>(
    db,
    `SELECT o.id, l.id AS list_id, l.name AS list_name, o.status::text AS status, o.created_at
     FROM subscribers s JOIN lists sl ON sl.id = s.list_id
     JOIN lists l ON l.account_id = sl.account_id JOIN subscribers o ON o.list_id = l.id AND o.email = s.email
     WHERE s.id = $1 ORDER BY l.name`,
    [id],
  );
}

/** The last emails of the subscriber's account to their address, through `(account_id, to)`, and whether each was opened. */
export async function mailToSubscriberRows(db: Tx, id: number, limit: number) {
  return rawQuery<{ id: string; kind: string; subject: string; status: string; created_at: Date; opened: boolean }>(
    db,
    `SELECT m.id, m.kind::text AS kind, m.subject, m.status::text AS status, m.created_at,
            EXISTS (SELECT 1 FROM message_opens o WHERE o.message_id = m.id) AS opened
     FROM subscribers s JOIN lists l ON l.id = s.list_id JOIN messages m ON m.account_id = l.account_id AND m."to" = s.email
     WHERE s.id = $1 ORDER BY m.created_at DESC LIMIT $2`,
    [id, limit],
  );
}
