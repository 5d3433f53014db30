import type { Db } from '../db';
import { BadRequest, NotFound } from '../errors';
import { Joi } from '../validate';
import { importSubscriber, type AddStatus } from './machine';
import { subscriberInput } from './schema';

/** One import at most this many rows (the console's form carries 256 KB). */
export const IMPORT_ROWS_MAX = 5_000;

export interface ImportResult {
  /** rows per answer of the add: active, pending (a confirmation email went out), exists, gone, suppressed */
  added: Record<AddStatus, number>;
  /** rows that are not an address (with their line numbers, the first 20) */
  invalid: number;
  invalidLines: number[];
}

/** RFC 4180 fields of one line: commas, double quotes around a field, "" for a quote inside one. */
function csvFields(line: string): string[] {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') fields.push(field), (field = '');
    else field += c;
  }
  fields.push(field);
  return fields.map((f) => f.trim());
}

const row = Joi.object({ email: subscriberInput.extract('email'), name: subscriberInput.extract('name') });

/**
 * Adds `email,name` lines (a header line `email,...` is skipped) to a list, each as the API's add would, one at a
 * time, without the list's hourly window. `confirmed`: the operator vouches that these people opted in (they become
 * active at once); otherwise a list with double opt-in sends each new person its confirmation email.
 */
export async function importSubscribers(db: Db, listId: number, csv: string, options: { confirmed: boolean }): Promise<ImportResult> {
  const list = await db.list.findUnique({ where: { id: listId }, include: { mailbox: true } });
  if (!list) throw new NotFound(`no list ${listId}`);
  const lines = csv.split(/\r?\n/).map((text, i) => ({ text, number: i + 1 })).filter((l) => l.text.trim() !== '');
  if (lines[0] && /^"?e-?mail"?\s*(,|$)/i.test(lines[0].text.trim())) lines.shift();
  if (!lines.length) throw new BadRequest('csv: no lines to import (one person a line: email,name)');
  if (lines.length > IMPORT_ROWS_MAX) throw new BadRequest(`csv: at most ${IMPORT_ROWS_MAX} lines an import, got ${lines.length}`);
  const result: ImportResult = { added: { active: 0, pending: 0, exists: 0, gone: 0, suppressed: 0 }, invalid: 0, invalidLines: [] };
  for (const line of lines) {
    const [email = '', name = ''] = csvFields(line.text);
    const { error, value } = row.validate({ email, name }, { convert: true });
    // NUL cannot be stored in Postgres text (the JSON API refuses it before any route: api/middleware/text.ts)
    if (error || line.text.includes('\0')) {
      result.invalid++;
      if (result.invalidLines.length < 20) result.invalidLines.push(line.number);
      continue;
    }
    const status = await importSubscriber(db, list, { email: value.email as string, name: value.name as string, confirmed: options.confirmed });
    result.added[status]++;
  }
  return result;
}
