import type { Mailbox, Message, Send } from '../../../../generated/prisma/client';
import { Batcher } from '../batch';
import type { Db } from '../db';
import type { MessageKind } from '../../../../generated/prisma/enums';
import type { EmailKinds } from './kinds';
import { HOLDER } from './lease';
import { claimUnguardedRows, markRowsSent } from './repository';

/** A column's camelCase name and whether it holds a timestamp. */
type Column = { name: string; date: boolean };

/** snake_case row JSON (row_to_json) to the client's camelCase model, timestamps as Dates; `columns` memoises names. */
function fromRow<T>(row: Record<string, unknown> | null, columns: Map<string, Column>): T | null {
  if (!row) return null;
  const out: Record<string, unknown> = {};
  for (const key in row) {
    const value = row[key];
    let column = columns.get(key);
    if (!column) {
      const name = key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
      columns.set(key, (column = { name, date: /(At|Day|Until|Before)$/.test(name) }));
    }
    out[column.name] = column.date && typeof value === 'string' ? new Date(value) : value;
  }
  return out as T;
}

export type ClaimedRow = Message & { mailbox: Mailbox; send: Send | null };

/** How many claim and "sent" statements a FastClaims ran (a test of the batching). */
export interface StatementStats {
  claims: number;
  marks: number;
}

/** Each statement's view of the claims' shared parts: its counters and the memo of column names. */
interface ClaimState {
  stats: StatementStats;
  columns: Map<string, Column>;
}

/**
 * The claims of concurrent deliveries in one statement: take each row that is due and waiting (`queued`, `deferred`),
 * and read its mailbox and Send with it. Rows of the `guarded` kinds are left to the full claim, which runs their
 * guard, and so are `sending` rows whose lease ran out, whose holder it asks about first.
 *
 * `status::text`, as in the "sent" mark below: the rows are found by primary key. Compared as the enum, the prepared
 * statement's generic plan ANDs the primary key with a walk of the status index over every queued row and every dead
 * entry the claims left (a BitmapAnd, seen with EXPLAIN under plan_cache_mode = force_generic_plan).
 */
async function claimBatch(db: Db, state: ClaimState, ids: string[], leaseMs: number, guarded: MessageKind[]): Promise<(ClaimedRow | null)[]> {
  state.stats.claims++;
  const { columns } = state;
  // each Send and each mailbox comes once per statement, with the first of its rows: the copies of a Send with a 1 MB
  // attachment would otherwise bring the attachment from Postgres once per recipient (50 MB for 50 copies)
  const rows = await claimUnguardedRows(db, ids, leaseMs, guarded, HOLDER);
  // the copies of one Send share one parsed Send (its attachments once in memory, not once per recipient), and the
  // rows of one mailbox one parsed mailbox
  const sends = new Map<string, Send>();
  const mailboxes = new Map<number, Mailbox>();
  for (const row of rows) {
    if (row.send) sends.set(row.send_id!, fromRow<Send>(row.send, columns)!);
    if (row.mailbox) mailboxes.set(row.mailbox_id, fromRow<Mailbox>(row.mailbox, columns)!);
  }
  const byId = new Map(
    rows.map((row) => [row.id, { ...fromRow<Message>(row.message, columns)!, mailbox: mailboxes.get(row.mailbox_id)!, send: row.send_id ? sends.get(row.send_id)! : null }]),
  );
  return ids.map((id) => {
    const claimed = byId.get(id) ?? null;
    byId.delete(id); // the same row asked twice in one batch is claimed once: the second asker finds it held
    return claimed;
  });
}

/**
 * "Delivered" for several rows at once; only the worker holding a row may say so. The same statement writes each row's
 * `message.sent` event into the outbox when an endpoint wants it (no second round trip, and no event without its mark),
 * and adds the rows to the `sent` and `delivered` counters of daily_counts (analytics/repository.ts): one counter row
 * update per statement, not per email. (Counting `sent` at the claim as well cost Postgres 0.17 ms of CPU an email
 * more than no counters, against 0.45 for the claim and the mark: bench/counters.ts.)
 *
 * `status::text`: the rows are found by primary key. Compared as the enum, the prepared statement's generic plan
 * could walk the status index instead (few rows are `sending`, by the statistics), through every in-flight row and
 * every dead entry the claims and marks left: 800 index entries read per mark in the bench, 60% of Postgres's index
 * reads. (A plan made before the table's first ANALYZE scans it whole either way, until autovacuum analyses it.)
 */
async function markSentBatch(db: Db, kinds: EmailKinds, stats: StatementStats, sent: SentMark[]): Promise<void[]> {
  stats.marks++;
  const watched = await markRowsSent(db, sent);
  // what follows the end of each kind (a waiting `Prefer: wait` request is woken: sending/finished.ts)
  kinds.finished(sent);
  // a window short of its minimum that holds a bounce is judged again as its emails end (outreach/auto-pause.ts)
  await kinds.windowsEnded(db, watched);
  return sent.map(() => undefined);
}

/** A row delivered, with its kind (for what follows its end) and its server's answer. */
type SentMark = { id: string; kind: MessageKind; response: string };

/**
 * A worker's concurrent deliveries share their claim and their "sent" statements (group commit: see batch.ts): the
 * claims of all its `dispatch` jobs and single deliveries, and the marks of every email it sent. A worker's jobs start
 * one after another, so only waiting makes batches: one statement in flight at a time, and each waits for company
 * (a claim 3 ms, a mark 10). A statement costs Postgres about 0.45 ms of CPU whatever its size, and each row about
 * 0.1 ms more (the mark of 1, 3, 10 and 30 rows: 0.55, 0.24, 0.13 and 0.09 ms a row). Measured on worker-alone drains
 * of 5,000 sends (bench/README.md): with each job claiming alone and marks not waiting, 2.17 ms of CPU an email over
 * the worker, Postgres, Redis and the sink; with shared claims 1.94; with marks waiting too 1.52.
 *
 * A claim holds up its email, a mark only the end of its job and a `Prefer: wait` answer: so the marks wait longer. In
 * the delivery bench, marks waiting 3 ms carried 12 to 13 rows each and cost Postgres 111 to 127 us an email; waiting
 * 10 ms, 24 to 25 rows and 88 to 98 us, at the same pace.
 *
 * Between the SMTP server's 250 and the mark's commit is the window in which a killed worker sends an email twice
 * (docs/reliability.md): the marks' wait widens it by 10 ms, against the 50 ms a busy Postgres already puts there.
 *
 * One per worker process (createDelivery, delivery/delivery.ts), so that all its deliveries share the batches.
 */
const CLAIM_LINGER_MS = 3;
const MARK_LINGER_MS = 10;

export class FastClaims {
  readonly stats: StatementStats = { claims: 0, marks: 0 };
  private readonly claims: Batcher<{ id: string; leaseMs: number; guarded: MessageKind[] }, ClaimedRow | null>;
  private readonly marks: Batcher<SentMark, void>;

  /** `kinds`: the process's kinds of email, told of the rows each mark ends (kinds.ts) */
  constructor(db: Db, kinds: EmailKinds) {
    const state: ClaimState = { stats: this.stats, columns: new Map() };
    // one lease and guard list for the whole batch: the first caller's (every caller of a process passes the same)
    this.claims = new Batcher((items) => claimBatch(db, state, items.map((i) => i.id), items[0]!.leaseMs, items[0]!.guarded), { maxInFlight: 1, maxBatch: 100, lingerMs: CLAIM_LINGER_MS });
    this.marks = new Batcher((items) => markSentBatch(db, kinds, this.stats, items), { maxInFlight: 1, maxBatch: 100, lingerMs: MARK_LINGER_MS });
  }

  /**
   * The claim of a message no pre-send guard watches (transactional copies): take the row if it is due and nobody
   * holds it, and read its mailbox and Send with it. Returns null when the row is not claimable this way (guarded kind,
   * final, held, early, suppressed, missing): the caller's full claim then decides what to answer.
   */
  claimUnguarded(messageId: string, leaseMs: number, guarded: MessageKind[]): Promise<ClaimedRow | null> {
    return this.claims.submit({ id: messageId, leaseMs, guarded });
  }

  /** The row is delivered; only the worker holding it may say so. Resolves once that is committed. */
  markSent(message: { id: string; kind: MessageKind }, response: string): Promise<void> {
    return this.marks.submit({ id: message.id, kind: message.kind, response });
  }
}
