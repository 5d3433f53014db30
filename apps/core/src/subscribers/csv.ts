import type { Writable } from 'node:stream';
import type { Tx } from '../db';
import { browseSubscribers } from './browse';

/** RFC 4180 quoting; a leading = + - @ is prefixed with ' so a spreadsheet never runs a cell as a formula. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The export's columns: every column an import takes (imports/parse.ts), then two the service sets. */
export const EXPORT_HEADER = 'email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at';

/**
 * Every subscriber of a list as CSV, read a keyset page at a time and written as it goes: memory stays flat on big
 * lists. Shared by the console's export and `GET /admin/api/lists/:id/subscribers.csv`. The file imports as it is
 * (docs/lists.md): tags joined by `;`, fields as a JSON object, the formula guard taken off again by the import.
 */
export async function writeSubscribersCsv(db: Tx, listId: number, out: Writable, filter: { status?: Parameters<typeof browseSubscribers>[2]['status'] } = {}): Promise<void> {
  out.write(`${EXPORT_HEADER}\r\n`);
  let after: number | undefined;
  do {
    const page = await browseSubscribers(db, listId, { after, limit: 1000, status: filter.status });
    if (page.rows.length) out.write(page.rows.map((s) => [s.email, s.name, s.status, s.tags.join(';'), Object.keys(s.fields).length ? JSON.stringify(s.fields) : '', s.consent_source, s.consent_at ?? '', s.created_at, s.confirmed_at ?? ''].map(csvCell).join(',')).join('\r\n') + '\r\n');
    after = page.next ? Number(page.next) : undefined;
  } while (after);
}
