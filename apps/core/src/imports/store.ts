import { StringDecoder } from 'node:string_decoder';
import type { Import } from '../../../../generated/prisma/client';
import { config } from '../config';
import { afterCommit } from '../after-commit';
import type { Db } from '../db';
import { BadRequest, NotFound, PayloadTooLarge } from '../errors';
import { logger } from '../logger';
import { QUEUE, jobId, queue } from '../queues';
import { csvRecords, type Line } from './csv';
import { LINE_MAX, parseHeader, type ImportFormat, type ImportStatusValue } from './parse';
import { insertImportLines } from './repository';
import type { VerifyMode } from '../verify';

/** Lines written to Postgres per statement while the body arrives: the API holds about this many at once. */
const STORE_BATCH = 2_000;
/** The per-line report keeps this many refusals (the counts cover every line). */
export const IMPORT_ERRORS_KEPT = 1_000;

export interface ImportView {
  id: number;
  list: number;
  status: 'queued' | 'running' | 'done' | 'failed';
  /** data lines received (the CSV header and blank lines are not counted) */
  total: number;
  /** lines applied so far (added + updated + skipped + refused): the progress */
  processed: number;
  added: number;
  updated: number;
  skipped: number;
  refused: number;
  /** [{line, reason}], `line` counting from 1 with the CSV header included; the first IMPORT_ERRORS_KEPT */
  errors: { line: number; reason: string }[];
  /** docs/verification.md: what the import was asked to do with each address's verification (null: none), and the lines by result */
  verify: string | null;
  verification: Record<string, number>;
  created_at: string;
  finished_at: string | null;
}

export function importView(row: Import): ImportView {
  return {
    id: row.id,
    list: row.listId,
    status: row.status,
    total: row.total,
    processed: row.added + row.updated + row.skipped + row.refused,
    added: row.added,
    updated: row.updated,
    skipped: row.skipped,
    refused: row.refused,
    errors: row.errors as ImportView['errors'],
    verify: row.verify,
    verification: row.verification as ImportView['verification'],
    created_at: row.createdAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
  };
}

export async function getImport(db: Db, id: number): Promise<ImportView> {
  const row = await db.import.findUnique({ where: { id } });
  if (!row) throw new NotFound(`no import with id ${id}`);
  return importView(row);
}

/** The list exists: checked before a byte of the body is read. */
/** The largest import body, IMPORT_MAX_BYTES (100 MB: about 2 million lines of a name and an address). */
export const importMaxBytes = (): number => config().importMaxBytes;

/** The refusal of an import over the limit, by its declared length or by the bytes read. */
export const importTooLarge = (maxBytes: number) => new PayloadTooLarge(`an import is at most ${maxBytes} bytes (IMPORT_MAX_BYTES)`);

export async function requireImportList(db: Db, listId: number): Promise<void> {
  if (!(await db.list.findUnique({ where: { id: listId }, select: { id: true } }))) throw new NotFound(`no list with id ${listId}`);
}

/** The body's lines, numbered from 1, blank ones included; NUL bytes and bytes that are not UTF-8 become U+FFFD. */
async function* linesOf(body: AsyncIterable<Buffer | string> | Iterable<Buffer | string>, maxBytes: number): AsyncGenerator<Line> {
  const decoder = new StringDecoder('utf8');
  let bytes = 0;
  let rest = '';
  let number = 0;
  const clean = (text: string) => text.replace(/\r$/, '').replaceAll('\0', '\uFFFD');
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > maxBytes) throw importTooLarge(maxBytes);
    const parts = (rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk))).split('\n');
    rest = parts.pop()!;
    for (const text of parts) yield { line: ++number, text: clean(text) };
  }
  rest += decoder.end();
  if (rest) yield { line: number + 1, text: clean(rest) };
}

/** An NDJSON body's lines, blank ones skipped. */
async function* ndjsonLines(lines: AsyncIterable<Line>): AsyncGenerator<Line> {
  for await (const line of lines) if (line.text.trim()) yield line;
}

/**
 * Stores an uploaded import and queues its job: the lines are written as they arrive, STORE_BATCH at a time, so the
 * API never holds the whole body; reading stops at the chunk that passes `maxBytes` (413). The import is taken by a worker only once all of it is stored (`received`); a body
 * cut off, too large, or whose CSV header is wrong leaves nothing behind. `commit` runs the last write, the import
 * marked received (an audited change's transaction: its entry written with it); its job is queued once that commits.
 */
export async function receiveImport(
  db: Db,
  listId: number,
  format: ImportFormat,
  body: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
  options: { defaultStatus?: ImportStatusValue; maxBytes?: number; verify?: VerifyMode; commit?: (work: (db: Db) => Promise<ImportView>) => Promise<ImportView> } = {},
): Promise<ImportView> {
  const maxBytes = options.maxBytes ?? importMaxBytes();
  await requireImportList(db, listId);
  // a CSV record may take several lines (a quoted line break): stored whole, numbered by its first line
  const lines = format === 'csv' ? csvRecords(linesOf(body, maxBytes), LINE_MAX) : ndjsonLines(linesOf(body, maxBytes));
  let columns: string[] = [];
  if (format === 'csv') {
    const header = await lines.next();
    if (header.done) throw new BadRequest('csv: no header line (email,name,tags,status,consent_source,consent_at)');
    columns = parseHeader(header.value.text);
  }
  const row = await db.import.create({ data: { listId, format, columns, defaultStatus: options.defaultStatus ?? null, verify: options.verify ?? null } });
  let total = 0;
  try {
    let batch: { line: number; text: string }[] = [];
    const flush = async () => {
      if (!batch.length) return;
      await insertImportLines(db, row.id, batch);
      total += batch.length;
      batch = [];
    };
    for await (const line of lines) {
      batch.push(line);
      if (batch.length >= STORE_BATCH) await flush();
    }
    await flush();
    if (!total) throw new BadRequest('no lines to import');
    const receive = async (tx: Db) => {
      const received = await tx.import.update({ where: { id: row.id }, data: { received: true, total } });
      await afterCommit(tx, () => queueImport(received.id));
      return importView(received);
    };
    return await (options.commit ? options.commit(receive) : receive(db));
  } catch (err) {
    await db.import.deleteMany({ where: { id: row.id, received: false } }).catch(() => undefined);
    throw err;
  }
}

/** Queues the import's job (one job per import: a repeated add is a no-op); a Redis hiccup leaves it to housekeeping. */
export async function queueImport(id: number): Promise<void> {
  try {
    await queue(QUEUE.imports).add(QUEUE.imports, { importId: id }, { jobId: jobId.import(id) });
  } catch (err) {
    logger.warn({ import: id, err: (err as Error).message }, 'import left for housekeeping to queue');
  }
}

/** An upload cut off by the API's own end (never answered 202) is removed after this long. */
const UNRECEIVED_KEPT_MS = 3_600_000;

/**
 * Housekeeping: queues every received import not finished (its job lost with Redis, or never queued), and removes the
 * uploads an API process was storing when it stopped (never accepted: their client got no 202).
 */
export async function requeueImports(db: Db): Promise<number> {
  await db.import.deleteMany({ where: { received: false, createdAt: { lt: new Date(Date.now() - UNRECEIVED_KEPT_MS) } } });
  const open = await db.import.findMany({ where: { received: true, status: { in: ['queued', 'running'] } }, select: { id: true } });
  for (const { id } of open) await queueImport(id);
  return open.length;
}
