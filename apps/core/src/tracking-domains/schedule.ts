import type { Db } from '../db';
import { logger } from '../logger';
import { checkTrackingDomain } from './index';
import { claimDueTrackingChecks, dropStaleChallenges } from './repository';
import { trackingDns, type TrackingDns } from './dns';

/** How long a claimed check (an order included) may take before another worker claims the domain again. */
const CLAIM_LEASE_MS = 10 * 60_000;
const BATCH = 20;

/**
 * The worker's `tracking-domains` housekeeping task (docs/tracking-domains.md): claims the tracking domains whose check
 * is due (a new one at once, a pending one TRACK_RECHECK_MINUTES later, a renewal at its renew_at, a retry after its
 * backoff) and checks them one after another (an order talks to the CA; CAs limit how fast), after dropping the
 * challenges a dead order left. Returns how many domains it checked.
 */
export async function recheckDueTrackingDomains(db: Db, dns: TrackingDns = trackingDns()): Promise<number> {
  await dropStaleChallenges(db);
  let total = 0;
  for (;;) {
    const claimed = await claimDueTrackingChecks(db, CLAIM_LEASE_MS, BATCH);
    for (const { id } of claimed) {
      // one domain's failure (Postgres hiccup) leaves it claimed: its lease runs out and it is checked again
      await checkTrackingDomain(db, id, dns).catch((err: Error) => logger.warn({ trackingDomain: id, err: err.message }, 'tracking domain check failed; trying again later'));
    }
    total += claimed.length;
    if (claimed.length < BATCH) return total;
  }
}
