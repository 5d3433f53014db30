import crypto from 'node:crypto';
import os from 'node:os';
import type { Db } from '../db';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { redis, rkey } from '../redis';
import { renewLeases } from './repository';

/**
 * How long a claimed row stays this worker's without a word from it (30 s by default, DELIVERY_LEASE_SECONDS). The
 * worker renews the leases of the rows it holds every sixth of that (heartbeat below), so a live worker keeps its
 * rows however long SMTP takes, and the rows of a dead one are claimable again within one lease.
 */
export function deliveryLeaseMs(): number {
  const seconds = Number(process.env.DELIVERY_LEASE_SECONDS);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 30_000;
}

/**
 * The rows a worker process holds (claimed, not yet marked) and the timer that renews them: one per process, made with
 * its delivery (createDelivery, delivery/delivery.ts).
 */
export class Heartbeat {
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
      await renewLeases(this.db, [...this.held], deliveryLeaseMs());
    } catch (err) {
      if (!noteOutage(err)) logger.warn({ rows: this.held.size, err: (err as Error).message }, 'could not renew delivery leases; trying again at the next beat');
    } finally {
      this.renewing = false;
    }
  }
}

/** Runs `work` while the row's lease is renewed by `beat`; the row is let go when it settles. */
export async function whileHeld<T>(beat: Heartbeat, id: string, work: () => Promise<T>): Promise<T> {
  beat.hold(id);
  try {
    return await work();
  } finally {
    beat.release(id);
  }
}

/**
 * This process as the rows it claims name it (`messages.locked_by`), and its beacon in Redis: a worker keeps
 * `<prefix>:holders:<id>` alive (renewed every HOLDER_BEAT_MS, gone HOLDER_TTL_MS after its last beat) whatever
 * Postgres does. A lease that ran out while Postgres was away says nothing about the worker: it may hold the email's
 * 250 in memory, its "sent" mark waiting for Postgres. The reconciler therefore leaves a `sending` row alone while its
 * holder's beacon lives, and takes it back once the beacon is gone (docs/reliability.md, "Postgres away longer than a lease").
 */
export const HOLDER = `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
export const HOLDER_TTL_MS = 15_000;
const HOLDER_BEAT_MS = 3_000;

const holderKey = (holder: string) => rkey('holders', holder);

/** Starts this process's beacon (the worker does, at start); returns its stop. */
export function startHolderBeacon(): () => void {
  const beat = () => void redis().set(holderKey(HOLDER), '1', 'PX', HOLDER_TTL_MS).catch(() => undefined);
  beat();
  const timer = setInterval(beat, HOLDER_BEAT_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    void redis().del(holderKey(HOLDER)).catch(() => undefined);
  };
}

/**
 * Whether the worker that claimed a `sending` row whose lease ran out still holds it: this process when the row is in
 * its heartbeat (its SMTP conversation or its "sent" mark still under way), another while its beacon lives. A lease
 * runs out while Postgres is away however alive its holder is, and Postgres may come back to a claim before the
 * holder's kept mark: the row is taken back only from a holder that is gone (a row this process let go unmarked, a
 * dead worker's), or from none (rows claimed before holders were named).
 */
export async function stillHeld(beat: Heartbeat, id: string, holder: string | null): Promise<boolean> {
  if (!holder) return false;
  if (holder === HOLDER) return beat.held.has(id);
  return (await liveHolders([holder])).has(holder);
}

/** Which of these holders' beacons are alive (one round trip). */
export async function liveHolders(holders: string[]): Promise<Set<string>> {
  const unique = [...new Set(holders)];
  if (!unique.length) return new Set();
  const found = await redis().mget(...unique.map(holderKey));
  return new Set(unique.filter((_, i) => found[i] !== null));
}
