import crypto from 'node:crypto';

/**
 * A time-ordered UUID (version 7, RFC 9562 section 5.7): 48 bits of Unix milliseconds, then 74 random bits.
 *
 * The ids of messages and sends are their tables' primary keys and appear in other indexes (send_id,
 * message_id_header). Random (version 4) ids put each new row on a random page of every such index: on a year of
 * rows those pages are mostly not in memory, and each first change of a page after a checkpoint writes the whole page
 * to the WAL. Time-ordered ids put new rows, and the rows the worker changes soon after, on the few pages at the
 * right edge of each index (bench/README.md, "Growth"). They still carry 74 random bits: not guessable, and GET
 * /api/v1/send/:id checks the account anyway. What they reveal is when the row was made, which the API answers say.
 *
 * Made from a version 4 UUID (Node's pooled randomness, variant bits already 10): its first 48 bits become the time
 * and its version digit a 7.
 */
export function newId(now = Date.now()): string {
  const random = crypto.randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}

/** The smallest time-ordered id of an instant (random bits all zero): the bound of a time partition (partitions/). */
export function idFloor(ms: number): string {
  const time = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-0000-0000-000000000000`;
}

/** The instant a time-ordered id was made (its first 48 bits). */
export function idTime(id: string): number {
  return parseInt(id.replace(/-/g, '').slice(0, 12), 16);
}
