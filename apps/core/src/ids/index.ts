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

const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WHOLE_SPAN: [string, string] = ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'];

/**
 * The least and the greatest of the ids. A statement that names its rows by a parameter array (`id = ANY($1)`) cannot
 * be pruned to the time partitions holding them (partitions/): Postgres prunes by an array only when it is a constant,
 * so a prepared statement's generic plan reads each partition's primary key for each id. Given `id BETWEEN $lo AND
 * $hi` beside the array, it prunes at the start of each execution to the partitions the span touches: usually one, the
 * current interval's. Ids compare as their canonical text does (lower-case hex, bytes in order); an id written another
 * way Postgres accepts (upper case, braces, no dashes), or none at all, gives the whole span: nothing pruned, nothing
 * missed.
 */
export function idSpan(ids: readonly string[]): [string, string] {
  let lo: string | null = null;
  let hi: string | null = null;
  for (const id of ids) {
    if (!CANONICAL.test(id)) return WHOLE_SPAN;
    if (lo === null || id < lo) lo = id;
    if (hi === null || id > hi) hi = id;
  }
  return lo === null || hi === null ? WHOLE_SPAN : [lo, hi];
}

/** How much older than its send a copy's id may be: a wall clock set back between the two newId calls (sendCopiesFloor). */
const CLOCK_SLACK_MS = 86_400_000;

/**
 * The least id a send's copies (messages.send_id) can carry. A version-7 send's copies are made after it, by the same
 * process and the same code (sending/accept.ts, batches/, submission/: the send's id first, its copies' ids when it is
 * written), so their ids are not older, give or take a day for a clock set back. With `id >= floor` beside
 * `send_id = $1`, Postgres plans and reads the send_id index of the partitions from the send's month on, not of every
 * partition (partitions/): on a year of months, planning the lookup took 1.04 ms against 0.27. An id that is not a
 * canonical version-7 one (a send made before ids were time-ordered, whose copies' ids are random too; one written in
 * upper case) gives the least id of all: nothing pruned, nothing missed.
 */
export function sendCopiesFloor(sendId: string): string {
  return CANONICAL.test(sendId) && sendId[14] === '7' ? idFloor(idTime(sendId) - CLOCK_SLACK_MS) : WHOLE_SPAN[0];
}
