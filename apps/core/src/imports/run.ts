import type { Import, List, Mailbox } from '../../../../generated/prisma/client';
import { rawQuery, type Db, type Tx } from '../db';
import { stopListed } from '../stop-list/rule';
import { importSubscriber } from '../subscribers/machine';
import { TAGS_MAX } from '../subscribers/schema';
import { parseLine, type ImportFormat, type ImportRow } from './parse';
import { IMPORT_ERRORS_KEPT } from './store';

/** Stored lines applied per transaction. */
export const APPLY_BATCH = 2_000;

type Loaded = Import & { list: List & { mailbox: Mailbox } };
interface Tally {
  added: number;
  updated: number;
  skipped: number;
  refused: number;
  errors: { line: number; reason: string }[];
}

/**
 * Applies an import's stored lines in batches, each in one transaction that also advances the import's cursor and
 * counts: a job run again after a crash or a restart starts after the last batch applied, so no line counts twice.
 * Answers what became of the import ('done', or 'absent' when it is not one to run).
 */
export async function runImport(db: Db, id: number): Promise<'done' | 'absent'> {
  const claimed = await rawQuery<{ id: number }>(
    db,
    `UPDATE imports SET status = 'running' WHERE id = $1 AND received AND status IN ('queued', 'running') RETURNING id`,
    [id],
  );
  if (!claimed.length) return 'absent';
  let current = await db.import.findUniqueOrThrow({ where: { id }, include: { list: { include: { mailbox: true } } } });
  for (;;) {
    const lines = await rawQuery<{ line: number; text: string }>(
      db,
      'SELECT line, text FROM import_lines WHERE import_id = $1 AND line > $2 ORDER BY line LIMIT $3',
      [id, current.cursor, APPLY_BATCH],
    );
    if (!lines.length) break;
    const parsed = lines.map((l) => parseLine(current.format as ImportFormat, current.columns, l.line, l.text, current.defaultStatus));
    current = { ...(await applyBatch(db, current, parsed, lines.at(-1)!.line)), list: current.list };
  }
  await db.$transaction([
    db.import.update({ where: { id }, data: { status: 'done', finishedAt: new Date() } }),
    db.importLine.deleteMany({ where: { importId: id } }),
  ]);
  return 'done';
}

/** The import could not be applied (its job ran out of attempts): failed, with the reason as its last error. */
export async function failImport(db: Db, id: number, reason: string): Promise<void> {
  await db.import.updateMany({ where: { id, status: { in: ['queued', 'running'] } }, data: { status: 'failed', finishedAt: new Date() } });
  await rawQuery(db, `UPDATE imports SET errors = errors || $2::jsonb WHERE id = $1`, [id, JSON.stringify([{ line: 0, reason: `the import stopped: ${reason}` }])]);
}

async function applyBatch(db: Db, imp: Loaded, parsed: ReturnType<typeof parseLine>[], lastLine: number): Promise<Import> {
  const tally: Tally = { added: 0, updated: 0, skipped: 0, refused: 0, errors: [] };
  const rows: ImportRow[] = [];
  for (const p of parsed) {
    if ('reason' in p) {
      tally.skipped++;
      tally.errors.push(p);
    } else rows.push(p);
  }
  const verdicts = await verdictsOf(db, imp.list, [...new Set(rows.map((r) => r.email))]);
  const refuse = (row: ImportRow, reason: string) => {
    tally.refused++;
    tally.errors.push({ line: row.line, reason });
  };
  const bulk: ImportRow[] = [];
  const suppressed: (ImportRow & { reason: string })[] = [];
  for (const row of rows) {
    const verdict = verdicts.get(row.email)!;
    if (verdict.stopped) refuse(row, 'the address is on the stop list');
    else if (verdict.suppressed) {
      refuse(row, `the address is suppressed (${verdict.suppressed})`);
      suppressed.push({ ...row, reason: verdict.suppressed });
    } else if (row.status === 'pending' || (row.status === null && imp.list.confirm)) {
      // the person confirms by email, as with the API's add (one transaction each, the confirmation queued after it)
      const status = await importSubscriber(db, imp.list, { email: row.email, name: row.name, tags: row.tags });
      if (status === 'suppressed') refuse(row, 'the address is suppressed');
      else if (status === 'exists' || status === 'gone') tally.skipped++;
      else tally[verdict.known ? 'updated' : 'added']++;
    } else bulk.push(row);
  }
  return db.$transaction(
    async (tx) => {
      if (suppressed.length) await insertSuppressed(tx, imp.listId, suppressed);
      // an address repeated in the batch: its later lines in later statements, applied in order (one subscriber)
      for (const round of rounds(bulk)) {
        const written = await upsert(tx, imp.listId, round);
        tally.added += written.filter((w) => w.inserted).length;
        tally.updated += written.filter((w) => !w.inserted).length;
        tally.skipped += round.length - written.length;
      }
      // the list's active count, exact: recounted under the list row's lock, taken after the subscribers' (machine.ts order)
      await rawQuery(
        tx,
        `UPDATE lists SET subscriber_count = (SELECT count(*)::int FROM subscribers WHERE list_id = $1 AND status = 'active') WHERE id = $1`,
        [imp.listId],
      );
      const room = Math.max(0, IMPORT_ERRORS_KEPT - (imp.errors as unknown[]).length);
      const [updated] = await rawQuery<{ id: number }>(
        tx,
        `UPDATE imports SET cursor = $2, added = added + $3, updated = updated + $4, skipped = skipped + $5, refused = refused + $6,
           errors = errors || $7::jsonb
         WHERE id = $1 AND cursor < $2 RETURNING id`,
        [imp.id, lastLine, tally.added, tally.updated, tally.skipped, tally.refused, JSON.stringify(tally.errors.slice(0, room))],
      );
      // another run of the same import applied this batch first: roll this one back
      if (!updated) throw new Error(`import ${imp.id}: lines up to ${lastLine} were applied by another run`);
      return tx.import.findUniqueOrThrow({ where: { id: imp.id } });
    },
    { timeout: 120_000, maxWait: 30_000 },
  );
}

/** The rows split so that no statement holds an address twice: the n-th line of an address goes in the n-th. */
function rounds(rows: ImportRow[]): ImportRow[][] {
  const out: ImportRow[][] = [];
  const seen = new Map<string, number>();
  for (const row of rows) {
    const n = seen.get(row.email) ?? 0;
    seen.set(row.email, n + 1);
    (out[n] ??= []).push(row);
  }
  return out;
}

/** Per address: on the stop list, suppressed in the account (and why), already on the list. */
async function verdictsOf(db: Db, list: List, emails: string[]) {
  const rows = await rawQuery<{ email: string; stopped: boolean; suppressed: string | null; known: boolean }>(
    db,
    `SELECT e.email, ${stopListed('$1', 'e.email')} AS stopped,
       COALESCE((SELECT sp.reason::text FROM suppressions sp WHERE sp.account_id = $1 AND sp.email = e.email),
                (SELECT s.status::text FROM subscribers s JOIN lists l ON l.id = s.list_id
                 WHERE l.account_id = $1 AND s.email = e.email AND s.status IN ('bounced', 'complained') LIMIT 1)) AS suppressed,
       EXISTS (SELECT 1 FROM subscribers s WHERE s.list_id = $2 AND s.email = e.email) AS known
     FROM unnest($3::text[]) AS e(email)`,
    [list.accountId, list.id, emails],
  );
  return new Map(rows.map((r) => [r.email, r]));
}

/** Suppressed addresses come in as such (bounced or complained), never active; a person already on the list stays. */
async function insertSuppressed(tx: Tx, listId: number, rows: (ImportRow & { reason: string })[]) {
  await rawQuery(
    tx,
    `INSERT INTO subscribers (list_id, email, name, tags, status, consent_source, consent_at)
     SELECT $1, i.email, i.name, ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)), i.reason::"SubscriberStatus", i.source, COALESCE(i.at, now())
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) AS i(email, name, tags, reason, source, at)
     ON CONFLICT (list_id, email) DO NOTHING`,
    [listId, ...columnsOf(rows, (r) => r.reason)],
  );
}

const columnsOf = (rows: ImportRow[], last: (row: ImportRow & { reason: string }) => string) => [
  rows.map((r) => r.email),
  rows.map((r) => r.name),
  rows.map((r) => JSON.stringify(r.tags)),
  rows.map((r) => last(r as ImportRow & { reason: string })),
  rows.map((r) => r.consentSource),
  rows.map((r) => r.consentAt),
];

/**
 * New people come in with their status (active unless the line says unsubscribed); a person already on the list keeps
 * their row: a non-empty name replaces the old one, tags are added, pending turns active and pending or active turns
 * unsubscribed when the line says so; one who left or bounced is never made active. Answers the rows it wrote (a line
 * that changes nothing writes nothing).
 */
async function upsert(tx: Tx, listId: number, rows: ImportRow[]): Promise<{ inserted: boolean }[]> {
  const activates = `s.status = 'pending' AND EXCLUDED.status = 'active'`;
  const leaves = `s.status IN ('pending', 'active') AND EXCLUDED.status = 'unsubscribed'`;
  return rawQuery<{ inserted: boolean }>(
    tx,
    `INSERT INTO subscribers AS s (list_id, email, name, tags, status, confirmed_at, unsubscribed_at, consent_source, consent_at)
     SELECT $1, i.email, i.name, ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)), i.status::"SubscriberStatus",
            CASE WHEN i.status = 'active' THEN now() END, CASE WHEN i.status = 'unsubscribed' THEN now() END,
            i.source, COALESCE(i.at, now())
     FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) AS i(email, name, tags, status, source, at)
     ON CONFLICT (list_id, email) DO UPDATE SET
       name = CASE WHEN EXCLUDED.name <> '' THEN EXCLUDED.name ELSE s.name END,
       tags = (s.tags || ARRAY(SELECT t FROM unnest(EXCLUDED.tags) AS t WHERE NOT t = ANY(s.tags)))[1:${TAGS_MAX}],
       status = CASE WHEN ${activates} THEN 'active'::"SubscriberStatus" WHEN ${leaves} THEN 'unsubscribed'::"SubscriberStatus" ELSE s.status END,
       confirmed_at = CASE WHEN ${activates} THEN now() ELSE s.confirmed_at END,
       unsubscribed_at = CASE WHEN ${leaves} THEN now() ELSE s.unsubscribed_at END,
       consent_source = CASE WHEN ${activates} THEN EXCLUDED.consent_source ELSE s.consent_source END,
       consent_at = CASE WHEN ${activates} THEN EXCLUDED.consent_at ELSE s.consent_at END,
       updated_at = now()
     WHERE (EXCLUDED.name <> '' AND EXCLUDED.name <> s.name) OR NOT (EXCLUDED.tags <@ s.tags) OR (${activates}) OR (${leaves})
     RETURNING (xmax = 0) AS inserted`,
    [listId, ...columnsOf(rows, (r) => r.status ?? 'active')],
  );
}
