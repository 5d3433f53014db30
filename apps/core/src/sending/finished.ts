import type { RedisClient as Redis } from '../redis-connect';
import type { Tx } from '../db';
import { logger } from '../logger';
import { closeWithRedis, createRedis, redis, rkey } from '../redis';
import { isFinalStatus } from '../message-status';
import { messageStatuses } from './repository';

/**
 * `Prefer: wait` without polling: the worker announces the messages it just finished on a Redis channel, and each API
 * process listens on one subscriber connection and wakes the requests waiting for them, which then read their copies'
 * statuses once. A lost announcement (Redis away, a process subscribing late) costs a little time, never the answer:
 * every waiter also looks again every FALLBACK_MS, and until the deadline.
 */
const FALLBACK_MS = 2_000;

const channel = () => rkey('messages', 'finished');

/** Worker side: these messages reached a final status (fire and forget: the waiters' fallback covers a lost one). */
export function announceFinished(ids: string[]): void {
  if (!ids.length) return;
  redis()
    .publish(channel(), ids.join(','))
    .catch((err: Error) => logger.debug({ err: err.message }, 'could not announce finished messages'));
}

/**
 * An API process's waiters for finished messages: one subscriber connection, opened at the first wait and closed by
 * stop() (or with the shared Redis connection), and the requests waiting on it. Made once by the API's createApp.
 */
export class FinishedWaits {
  /** How many times waiters read their copies' statuses (a test and a gauge of the mechanism's cost). */
  readonly stats = { reads: 0 };
  private readonly waiting = new Map<string, Set<() => void>>();
  private subscriber: Redis | undefined;

  private listen(): void {
    if (this.subscriber) return;
    const connection = createRedis({ maxRetriesPerRequest: null });
    connection.on('error', (err) => logger.warn({ err: err.message }, 'finished-messages subscription error'));
    connection.on('message', (_channel, payload: string) => {
      for (const id of payload.split(',')) for (const wake of this.waiting.get(id) ?? []) wake();
    });
    void connection.subscribe(channel()).catch(() => undefined);
    this.subscriber = connection;
    closeWithRedis(() => this.stop());
  }

  /** Closes the subscriber connection; a later wait opens a new one. */
  async stop(): Promise<void> {
    const connection = this.subscriber;
    this.subscriber = undefined;
    await connection?.quit().catch(() => connection.disconnect());
  }

  private async statuses(db: Tx, ids: string[]): Promise<Map<string, string> | null> {
    this.stats.reads++;
    const rows = await messageStatuses(db, ids);
    return rows.every((r) => isFinalStatus(r.status)) ? new Map(rows.map((r) => [r.id, r.status])) : null;
  }

  /** The copies' final statuses once all are finished, or null when `seconds` ran out first. */
  async waitFor(db: Tx, ids: string[], seconds: number): Promise<Map<string, string> | null> {
    this.listen();
    const deadline = Date.now() + seconds * 1000;
    let wake: () => void = () => undefined;
    const woken = () => wake();
    for (const id of ids) {
      let set = this.waiting.get(id);
      if (!set) this.waiting.set(id, (set = new Set()));
      set.add(woken);
    }
    try {
      for (;;) {
        const done = await this.statuses(db, ids);
        if (done) return done;
        const left = deadline - Date.now();
        if (left <= 0) return null;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(FALLBACK_MS, left));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      for (const id of ids) {
        const set = this.waiting.get(id);
        set?.delete(woken);
        if (set && !set.size) this.waiting.delete(id);
      }
    }
  }
}
