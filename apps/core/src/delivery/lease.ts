import { rawQuery, type Db } from '../db';
import { logger } from '../logger';

/**
 * How long a claimed row stays this worker's without a word from it (30 s by default, DELIVERY_LEASE_SECONDS). The
 * worker renews the leases of the rows it holds every sixth of that (heartbeat below), so a live worker keeps its
 * rows however long SMTP takes, and the rows of a dead one are claimable again within one lease.
 */
export function deliveryLeaseMs(): number {
  const seconds = Number(process.env.DELIVERY_LEASE_SECONDS);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 30_000;
}

/** The rows this process holds (claimed, not yet marked), per database client, and the timer that renews them. */
class Heartbeat {
  readonly held = new Set<string>();
  private timer?: NodeJS.Timeout;
  private renewing = false;

  constructor(private readonly db: Db) {}

  hold(id: string): void {
    this.held.add(id);
    if (!this.timer) {
      const every = Math.max(200, Math.floor(deliveryLeaseMs() / 6));
      this.timer = setInterval(() => void this.renew(), every);
      this.timer.unref();
    }
  }

  release(id: string): void {
    this.held.delete(id);
    if (!this.held.size && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * One statement for every held row, found by primary key (`::text`: see markSentBatch); a failure (Postgres away)
   * waits for the next beat.
   */
  async renew(): Promise<void> {
    if (this.renewing || !this.held.size) return;
    this.renewing = true;
    try {
      await rawQuery(
        this.db,
        `UPDATE messages SET locked_until = now() + $2 * interval '1 millisecond' WHERE id = ANY($1::uuid[]) AND status::text = 'sending'`,
        [[...this.held], deliveryLeaseMs()],
        'renew-leases',
      );
    } catch (err) {
      logger.warn({ rows: this.held.size, err: (err as Error).message }, 'could not renew delivery leases; trying again at the next beat');
    } finally {
      this.renewing = false;
    }
  }
}

const heartbeats = new WeakMap<Db, Heartbeat>();

export function heartbeatOf(db: Db): Heartbeat {
  let found = heartbeats.get(db);
  if (!found) heartbeats.set(db, (found = new Heartbeat(db)));
  return found;
}

/** Runs `work` while the row's lease is renewed; the row is let go when it settles. */
export async function whileHeld<T>(db: Db, id: string, work: () => Promise<T>): Promise<T> {
  const beat = heartbeatOf(db);
  beat.hold(id);
  try {
    return await work();
  } finally {
    beat.release(id);
  }
}
