import type { Db } from '../db';
import { logger } from '../logger';
import { checkDomain, type MailboxMemo } from './index';
import { claimDueDomainChecks } from './repository';
import { dnsLookup, type DnsLookup } from './resolver';

/** How long a claimed check may take before another worker claims the domain again. */
const CLAIM_LEASE_MS = 5 * 60_000;
const BATCH = 200;
/** Domains checked at once: DNS answers are waited for, not computed. */
const CONCURRENCY = 50;

/**
 * The periodic check of docs/domains.md (the worker's `domains` housekeeping task): claims the domains whose
 * `next_check_at` is due (DOMAIN_RECHECK_HOURS after their last check, at once for a new one) and checks them,
 * CONCURRENCY at a time. Returns how many it checked.
 */
export async function recheckDueDomains(db: Db, dns: DnsLookup = dnsLookup()): Promise<number> {
  let total = 0;
  for (;;) {
    const claimed = await claimDueDomainChecks(db, CLAIM_LEASE_MS, BATCH);
    // the accounts' mailboxes (their relays) read once for the batch
    const memo: MailboxMemo = new Map();
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, claimed.length) }, async () => {
        while (next < claimed.length) {
          const { id } = claimed[next++]!;
          // one domain's failure (Postgres hiccup) leaves it claimed: its lease runs out and it is checked again
          await checkDomain(db, id, dns, memo).catch((err: Error) => logger.warn({ domain: id, err: err.message }, 'domain check failed; trying again later'));
        }
      }),
    );
    total += claimed.length;
    if (claimed.length < BATCH) return total;
  }
}
