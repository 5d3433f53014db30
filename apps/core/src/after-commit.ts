import type { Db, Tx } from './db';

/**
 * Work that follows the commit of the change it belongs to: a job put on a queue, a cache dropped in Redis, a message
 * published (docs/teams.md, the audit log). A domain function writes its rows on the db it is given, then hands this
 * work to `afterCommit`. On a db outside a transaction the rows are committed already, and the work runs at once; on
 * the db of an audited change (`deferring`: the change and its audit entry in one transaction) it is kept and runs once
 * that transaction has committed, so an entry is never missing for an applied change nor present for a refused one,
 * and a worker never sees a job before its row.
 */
type Work = (db: Db) => Promise<unknown>;

const KEPT = Symbol('work after commit');

interface Keeping {
  [KEPT]?: Work[];
}

/** Runs `work` now, or once the transaction `db` belongs to has committed; `work` gets a db usable then. */
export async function afterCommit<D extends Tx>(db: D, work: (db: Db) => Promise<unknown>): Promise<void> {
  const kept = (db as Keeping)[KEPT];
  if (kept) kept.push(work);
  else await work(db as unknown as Db);
}

/**
 * The transaction's client as a `Db` for domain functions written over one: their own `$transaction` runs its work
 * inline, in this transaction (and `poolTransaction`/`rawQuery`, finding no pool of theirs, go through it too); their
 * `afterCommit` work is kept in `kept`, for `runKept` on `base` once the transaction has committed.
 */
export function deferring(tx: Tx, kept: Work[]): Db {
  const inline: Db = new Proxy(tx, {
    get(target, prop) {
      if (prop === KEPT) return kept;
      if (prop === '$transaction') return (work: unknown) => (typeof work === 'function' ? (work as (db: Db) => Promise<unknown>)(inline) : Promise.all(work as Promise<unknown>[]));
      const value: unknown = Reflect.get(target, prop);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as Db;
  return inline;
}

/** The kept work of a committed transaction, in order, on `base`; every one runs, and the first failure is thrown. */
export async function runKept(base: Db, kept: Work[]): Promise<void> {
  let failure: unknown;
  for (const work of kept) {
    try {
      await work(base);
    } catch (err) {
      failure ??= err;
    }
  }
  if (failure !== undefined) throw failure;
}
