import type { Import, List, Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { importSubscriber } from '../subscribers/machine';
import { parseLine, type ImportFormat, type ImportRow } from './parse';
import { addressVerdicts, advanceImport, appendImportErrors, claimImport, importLinesAfter, insertSuppressed, recountActive, upsertSubscribers, type BatchTally } from './repository';
import { IMPORT_ERRORS_KEPT } from './store';
import type { Verifier } from '../verify';
import { VerifiedBatch } from '../verify/batch';
import { countOnImport, keepVerifications } from '../verify/repository';

/** Stored lines applied per transaction. */
export const APPLY_BATCH = 2_000;

type Loaded = Import & { list: List & { mailbox: Mailbox } };

/**
 * Applies an import's stored lines in batches, each in one transaction that also advances the import's cursor and
 * counts: a job run again after a crash or a restart starts after the last batch applied, so no line counts twice.
 * Answers what became of the import ('done', or 'absent' when it is not one to run).
 */
export async function runImport(db: Db, id: number, verifier: Verifier | null = null): Promise<'done' | 'absent'> {
  if (!(await claimImport(db, id))) return 'absent';
  let current = await db.import.findUniqueOrThrow({ where: { id }, include: { list: { include: { mailbox: true } } } });
  if (current.verify && !verifier) throw new Error(`import ${id} asks for verification and this run has no verifier`);
  for (;;) {
    const lines = await importLinesAfter(db, id, current.cursor, APPLY_BATCH);
    if (!lines.length) break;
    const parsed = lines.map((l) => parseLine(current.format as ImportFormat, current.columns, l.line, l.text, current.defaultStatus));
    current = { ...(await applyBatch(db, current, parsed, lines.at(-1)!.line, verifier)), list: current.list };
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
  await appendImportErrors(db, id, [{ line: 0, reason: `the import stopped: ${reason}` }]);
}

async function applyBatch(db: Db, imp: Loaded, parsed: ReturnType<typeof parseLine>[], lastLine: number, verifier: Verifier | null): Promise<Import> {
  const tally: BatchTally = { added: 0, updated: 0, skipped: 0, refused: 0, errors: [] };
  const rows: ImportRow[] = [];
  for (const p of parsed) {
    if ('reason' in p) {
      tally.skipped++;
      tally.errors.push(p);
    } else rows.push(p);
  }
  const emails = [...new Set(rows.map((r) => r.email))];
  const verdicts = await addressVerdicts(db, imp.list.accountId, imp.list.id, emails);
  // docs/verification.md: the batch's addresses verified at once (one statement of history, one DNS question per domain)
  const verified = imp.verify ? await VerifiedBatch.of(db, verifier!, imp.list.accountId, emails) : null;
  const refuse = (row: ImportRow, reason: string) => {
    tally.refused++;
    tally.errors.push({ line: row.line, reason });
  };
  const bulk: ImportRow[] = [];
  const suppressed: (ImportRow & { reason: string })[] = [];
  for (const row of rows) {
    const verdict = verdicts.get(row.email)!;
    if (verdict.stopped) refuse(row, 'the address is on the stop list');
    else if (row.status === 'bounced' || row.status === 'complained') {
      // an export's bounced or complained person: recorded so on the list (never written to), like a suppressed address
      refuse(row, `the line says ${row.status}: recorded, never written to`);
      suppressed.push({ ...row, reason: row.status });
    } else if (verdict.suppressed) {
      refuse(row, `the address is suppressed (${verdict.suppressed})`);
      suppressed.push({ ...row, reason: verdict.suppressed });
    } else if (verified?.blocks(imp.verify, row.email)) {
      refuse(row, verified.refusal(row.email));
    } else if (row.status === 'pending' || (row.status === null && imp.list.confirm)) {
      // the person confirms by email, as with the API's add (one transaction each, the confirmation queued after it)
      const status = await importSubscriber(db, imp.list, { email: row.email, name: row.name, tags: row.tags, fields: row.fields });
      if (status === 'suppressed') refuse(row, 'the address is suppressed');
      else if (status === 'exists' || status === 'gone') tally.skipped++;
      else tally[verdict.known ? 'updated' : 'added']++;
      // a later line of the same address in this batch finds the person on the list
      verdict.known = true;
    } else bulk.push(row);
  }
  return db.$transaction(
    async (tx) => {
      if (suppressed.length) await insertSuppressed(tx, imp.listId, suppressed);
      // an address repeated in the batch: its later lines in later statements, applied in order (one subscriber)
      for (const round of rounds(bulk)) {
        const written = await upsertSubscribers(tx, imp.listId, round);
        tally.added += written.filter((w) => w.inserted).length;
        tally.updated += written.filter((w) => !w.inserted).length;
        tally.skipped += round.length - written.length;
      }
      // the list's active count, exact: recounted under the list row's lock, taken after the subscribers' (machine.ts order)
      await recountActive(tx, imp.listId);
      if (verified) {
        await keepVerifications(tx, { list: imp.listId }, verified.kept());
        // the lines verified, by result (an address on two lines counts twice, as the import's other counts do)
        const counts: Record<string, number> = {};
        for (const row of rows) counts[verified.get(row.email)!.result] = (counts[verified.get(row.email)!.result] ?? 0) + 1;
        await countOnImport(tx, imp.id, counts);
      }
      const room = Math.max(0, IMPORT_ERRORS_KEPT - (imp.errors as unknown[]).length);
      const advanced = await advanceImport(tx, imp.id, lastLine, { ...tally, errors: tally.errors.slice(0, room) });
      // another run of the same import applied this batch first: roll this one back
      if (!advanced) throw new Error(`import ${imp.id}: lines up to ${lastLine} were applied by another run`);
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
