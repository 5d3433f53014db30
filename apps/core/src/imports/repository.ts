import { recordConsentSql } from '../consent/repository';
import { rawQuery, type Db, type Tx } from '../db';
import { stopListed } from '../stop-list/repository';
import { TAGS_MAX } from '../subscribers/schema';
import type { ImportRow } from './parse';

/**
 * The imports' SQL, and nothing else writes it: the import rows and their stored lines, and what an import writes to
 * the subscribers of its list. Typed Prisma calls stay in the modules that use them.
 */

/** Inserts a batch of an import's stored lines (numbers and texts). */
export async function insertImportLines(db: Db, importId: number, lines: { line: number; text: string }[]): Promise<void> {
  await rawQuery(db, 'INSERT INTO import_lines (import_id, line, text) SELECT $1, * FROM unnest($2::int[], $3::text[])', [
    importId,
    lines.map((l) => l.line),
    lines.map((l) => l.text),
  ]);
}

/** Marks a received, queued or running import running; false when it is not one to run. */
export async function claimImport(db: Db, id: number): Promise<boolean> {
  const claimed = await rawQuery<{ id: number }>(
    db,
    `UPDATE imports SET status = 'running' WHERE id = $1 AND received AND status IN ('queued', 'running') RETURNING id`,
    [id],
  );
  return claimed.length > 0;
}

/** Reads the import's stored lines after `after`, in order, at most `limit`. */
export function importLinesAfter(db: Db, id: number, after: number, limit: number): Promise<{ line: number; text: string }[]> {
  return rawQuery<{ line: number; text: string }>(
    db,
    'SELECT line, text FROM import_lines WHERE import_id = $1 AND line > $2 ORDER BY line LIMIT $3',
    [id, after, limit],
  );
}

/** Appends these errors ({ line, reason }) to the import's. */
export async function appendImportErrors(db: Db, id: number, errors: { line: number; reason: string }[]): Promise<void> {
  await rawQuery(db, `UPDATE imports SET errors = errors || $2::jsonb WHERE id = $1`, [id, JSON.stringify(errors)]);
}

/** Sets the list's subscriber_count to its active subscribers, counted now (under the list row's lock). */
export async function recountActive(tx: Tx, listId: number): Promise<void> {
  await rawQuery(
    tx,
    `UPDATE lists SET subscriber_count = (SELECT count(*)::int FROM subscribers WHERE list_id = $1 AND status = 'active') WHERE id = $1`,
    [listId],
  );
}

/** What a batch did, added to the import's counts and errors. */
export interface BatchTally {
  added: number;
  updated: number;
  skipped: number;
  refused: number;
  errors: { line: number; reason: string }[];
}

/** Moves the import's cursor to `lastLine` and adds the batch's tally, when no other run got there first; false when one did. */
export async function advanceImport(tx: Tx, id: number, lastLine: number, tally: BatchTally): Promise<boolean> {
  const [updated] = await rawQuery<{ id: number }>(
    tx,
    `UPDATE imports SET cursor = $2, added = added + $3, updated = updated + $4, skipped = skipped + $5, refused = refused + $6,
           errors = errors || $7::jsonb
         WHERE id = $1 AND cursor < $2 RETURNING id`,
    [id, lastLine, tally.added, tally.updated, tally.skipped, tally.refused, JSON.stringify(tally.errors)],
  );
  return updated !== undefined;
}

/** Per address: on the account's stop list, suppressed in the account (and why), already on the list. */
export async function addressVerdicts(db: Db, accountId: number, listId: number, emails: string[]): Promise<Map<string, { email: string; stopped: boolean; suppressed: string | null; known: boolean }>> {
  const rows = await rawQuery<{ email: string; stopped: boolean; suppressed: string | null; known: boolean }>(
    db,
    `SELECT e.email, ${stopListed('$1', 'e.email')} AS stopped,
       COALESCE((SELECT sp.reason::text FROM suppressions sp WHERE sp.account_id = $1 AND sp.email = e.email),
                (SELECT s.status::text FROM subscribers s JOIN lists l ON l.id = s.list_id
                 WHERE l.account_id = $1 AND s.email = e.email AND s.status IN ('bounced', 'complained') LIMIT 1)) AS suppressed,
       EXISTS (SELECT 1 FROM subscribers s WHERE s.list_id = $2 AND s.email = e.email) AS known
     FROM unnest($3::text[]) AS e(email)`,
    [accountId, listId, emails],
  );
  return new Map(rows.map((r) => [r.email, r]));
}

/** The rows' columns as the statements' arrays, the status column given by `last`. */
const columnsOf = (rows: ImportRow[], last: (row: ImportRow & { reason: string }) => string) => [
  rows.map((r) => r.email),
  rows.map((r) => r.name),
  rows.map((r) => JSON.stringify(r.tags)),
  rows.map((r) => last(r as ImportRow & { reason: string })),
  rows.map((r) => r.consentSource),
  rows.map((r) => r.consentAt),
  rows.map((r) => JSON.stringify(r.fields)),
];

/** Inserts suppressed addresses with their reason (bounced or complained) as status; a person already on the list stays. */
/** The consent ledger's `import` row of each subscriber an import wrote (the `written` CTE), with the consent the line carried. */
const importLedger = recordConsentSql(
  'written',
  `'import'`,
  `'import'`,
  `''`,
  `jsonb_build_object('status', r.status, 'consent_source', r.consent_source, 'consent_at', r.consent_at)`,
);

export async function insertSuppressed(tx: Tx, listId: number, rows: (ImportRow & { reason: string })[]): Promise<void> {
  await rawQuery(
    tx,
    `WITH written AS (
       INSERT INTO subscribers (list_id, email, name, tags, fields, status, consent_source, consent_at)
       SELECT $1, i.email, i.name, ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)), i.fields::jsonb, i.reason::"SubscriberStatus", i.source, COALESCE(i.at, now())
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[]) AS i(email, name, tags, reason, source, at, fields)
       ON CONFLICT (list_id, email) DO NOTHING
       RETURNING id, status::text AS status, consent_source, consent_at
     ), ledger AS (${importLedger})
     SELECT 1`,
    [listId, ...columnsOf(rows, (r) => r.reason)],
  );
}

/**
 * Inserts new people with their status (active unless the line says unsubscribed), or changes a person already on the
 * list: a non-empty name replaces the old one, tags are added, fields merged (the line's values win), pending turns active and pending or active turns
 * unsubscribed when the line says so; one who left or bounced is never made active. Answers the rows it wrote (a line
 * that changes nothing writes nothing), each with whether it was inserted.
 */
export function upsertSubscribers(tx: Tx, listId: number, rows: ImportRow[]): Promise<{ inserted: boolean }[]> {
  const activates = `s.status = 'pending' AND EXCLUDED.status = 'active'`;
  const leaves = `s.status IN ('pending', 'active') AND EXCLUDED.status = 'unsubscribed'`;
  return rawQuery<{ inserted: boolean }>(
    tx,
    `WITH written AS (
     INSERT INTO subscribers AS s (list_id, email, name, tags, fields, status, confirmed_at, unsubscribed_at, consent_source, consent_at)
     SELECT $1, i.email, i.name, ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)), i.fields::jsonb, i.status::"SubscriberStatus",
            CASE WHEN i.status = 'active' THEN now() END, CASE WHEN i.status = 'unsubscribed' THEN now() END,
            i.source, COALESCE(i.at, now())
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[]) AS i(email, name, tags, status, source, at, fields)
     ON CONFLICT (list_id, email) DO UPDATE SET
       name = CASE WHEN EXCLUDED.name <> '' THEN EXCLUDED.name ELSE s.name END,
       tags = (s.tags || ARRAY(SELECT t FROM unnest(EXCLUDED.tags) AS t WHERE NOT t = ANY(s.tags)))[1:${TAGS_MAX}],
       fields = s.fields || EXCLUDED.fields,
       status = CASE WHEN ${activates} THEN 'active'::"SubscriberStatus" WHEN ${leaves} THEN 'unsubscribed'::"SubscriberStatus" ELSE s.status END,
       confirmed_at = CASE WHEN ${activates} THEN now() ELSE s.confirmed_at END,
       unsubscribed_at = CASE WHEN ${leaves} THEN now() ELSE s.unsubscribed_at END,
       consent_source = CASE WHEN ${activates} THEN EXCLUDED.consent_source ELSE s.consent_source END,
       consent_at = CASE WHEN ${activates} THEN EXCLUDED.consent_at ELSE s.consent_at END,
       updated_at = now()
     WHERE (EXCLUDED.name <> '' AND EXCLUDED.name <> s.name) OR NOT (EXCLUDED.tags <@ s.tags) OR NOT (EXCLUDED.fields <@ s.fields) OR (${activates}) OR (${leaves})
     RETURNING (xmax = 0) AS inserted, s.id, s.status::text AS status, s.consent_source, s.consent_at
     ), ledger AS (${importLedger})
     SELECT inserted FROM written`,
    [listId, ...columnsOf(rows, (r) => r.status ?? 'active')],
  );
}
