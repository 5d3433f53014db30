import type { Writable } from 'node:stream';
import type { Tx } from '../db';
import { browseSubscribers } from '../services/browse';

/** RFC 4180 quoting; a leading = + - @ is prefixed with ' so a spreadsheet never runs a cell as a formula. */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * Every subscriber of a list as CSV, read a keyset page at a time and written as it goes: memory stays flat on big
 * lists. Shared by the console's export and `GET /admin/api/lists/:id/subscribers.csv`.
 */
export async function writeSubscribersCsv(db: Tx, listId: number, out: Writable, filter: { status?: Parameters<typeof browseSubscribers>[2]['status'] } = {}): Promise<void> {
  out.write('email,name,status,created_at,confirmed_at\r\n');
  let after: number | undefined;
  do {
    const page = await browseSubscribers(db, listId, { after, limit: 1000, status: filter.status });
    if (page.rows.length) out.write(page.rows.map((s) => [s.email, s.name, s.status, s.created_at, s.confirmed_at ?? ''].map(csvCell).join(',')).join('\r\n') + '\r\n');
    after = page.next ? Number(page.next) : undefined;
  } while (after);
}
