import type { TrackingDomain } from '../../../../generated/prisma/client';
import { requireAccount } from '../accounts';
import { config } from '../config';
import { encryptSecret } from '../crypto';
import { Prisma, type Db, type Tx } from '../db';
import { Conflict, NotFound } from '../errors';
import { displayName, domainName } from '../domains/names';
import { DnsUnavailable } from '../domains/resolver';
import { AcmeFailure, caaIdentities, orderCertificate } from './acme';
import { caaRefusal, trackingDns, type TrackingDns } from './dns';
import { accountWhere, type AccountScope } from '../account-scope';

/** The answer shape of a tracking domain (docs/tracking-domains.md); the private key never appears in it. */
export interface TrackingDomainView {
  id: number;
  account: number;
  name: string;
  display_name: string;
  status: TrackingDomain['status'];
  /** what is missing or went wrong; null when all is well */
  reason: string | null;
  /** the record to publish */
  record: { type: 'CNAME'; host: string; value: string };
  /** what DNS answered for the name's CNAME at the last check */
  seen: string[];
  /** does an email's click and open links use this name now */
  live: boolean;
  certificate: { issued_at: Date | null; not_after: Date; renew_at: Date | null } | null;
  attempts: number;
  checked_at: Date | null;
  next_check_at: Date;
  created_at: Date;
}

const RENEW_BEFORE_MS = 30 * 24 * 3600_000;
/** renewals spread over a day, so certificates ordered together are not renewed together */
const RENEW_JITTER_MS = 24 * 3600_000;
const RETRY_MAX_MS = 6 * 3600_000;

export function trackingDomainView(d: TrackingDomain): TrackingDomainView {
  return {
    id: d.id,
    account: d.accountId,
    name: d.name,
    display_name: displayName(d.name),
    status: d.status,
    reason: d.reason,
    record: { type: 'CNAME', host: d.name, value: config().tracking.hostname },
    seen: d.seen,
    live: d.status === 'active' && d.notAfter !== null && d.notAfter.getTime() > Date.now() + 60_000,
    certificate: d.notAfter ? { issued_at: d.issuedAt, not_after: d.notAfter, renew_at: d.renewAt } : null,
    attempts: d.attempts,
    checked_at: d.checkedAt,
    next_check_at: d.nextCheckAt,
    created_at: d.createdAt,
  };
}

async function load(db: Tx, id: number, account?: number): Promise<TrackingDomain> {
  const d = await db.trackingDomain.findUnique({ where: { id } });
  // another account's domain is as unknown as a missing one
  if (!d || (account !== undefined && d.accountId !== account)) throw new NotFound(`no tracking domain with id ${id}${account !== undefined ? ` in account ${account}` : ''}`);
  return d;
}

/** POST /admin/api/tracking-domains: the account's new tracking domain, with the CNAME to publish; checked at once. */
export async function addTrackingDomain(db: Tx, input: { account: number; name: string }): Promise<TrackingDomainView> {
  const name = domainName(input.name);
  await requireAccount(db, input.account);
  if (name === config().tracking.hostname) throw new Conflict(`${name} is the service's own tracking host (TRACK_HOSTNAME): use a name of the account's domain, such as track.example.com`);
  const existing = await db.trackingDomain.findUnique({ where: { name } });
  if (existing) throw new Conflict(existing.accountId === input.account ? `the account already has the tracking domain ${name} (id ${existing.id})` : `${name} is another account's tracking domain`);
  const created = await db.trackingDomain
    .create({ data: { accountId: input.account, name, reason: `not checked yet: publish ${name} CNAME ${config().tracking.hostname}` } })
    .catch((err: unknown) => {
      // added by a request that passed the check above at the same time
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') throw new Conflict(`${name} is already a tracking domain`);
      throw err;
    });
  return trackingDomainView(created);
}

export async function listTrackingDomains(db: Tx, account?: AccountScope): Promise<TrackingDomainView[]> {
  const rows = await db.trackingDomain.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return rows.map(trackingDomainView);
}

export async function getTrackingDomain(db: Tx, id: number, account?: number): Promise<TrackingDomainView> {
  return trackingDomainView(await load(db, id, account));
}

export async function removeTrackingDomain(db: Tx, id: number, account?: number): Promise<void> {
  await load(db, id, account);
  await db.trackingDomain.delete({ where: { id } });
}

/** POST /admin/api/tracking-domains/:id/verify: check now (and order a certificate when one is due), as the schedule does. */
export async function verifyTrackingDomain(db: Db, id: number, options: { account?: number; dns?: TrackingDns } = {}): Promise<TrackingDomainView> {
  await load(db, id, options.account);
  await checkTrackingDomain(db, id, options.dns ?? trackingDns());
  return trackingDomainView(await load(db, id));
}

/**
 * When a certificate is renewed: 30 days before its expiry, less a random part of a day. A certificate that lives
 * under 90 days is renewed when a third of its life is left (with a jitter of a tenth of its life at most), so a short
 * one is not ordered again at every check.
 */
export function renewalTime(notAfter: Date, issuedAt: number): Date {
  const life = notAfter.getTime() - issuedAt;
  const before = Math.min(RENEW_BEFORE_MS, life / 3);
  const jitter = Math.min(RENEW_JITTER_MS, life / 10);
  return new Date(notAfter.getTime() - before - Math.floor(Math.random() * jitter));
}

/** Does the domain need a certificate now: none, or its renewal is due. */
const certificateDue = (d: TrackingDomain, now: number) => !d.notAfter || !d.renewAt || d.renewAt.getTime() <= now;

/**
 * One check of a tracking domain: its CNAME in DNS (missing: pending, with what DNS answered, and its links fall back to
 * PUBLIC_URL); then, when a certificate is due (none yet, or 30 days before expiry less a jitter), CAA (forbidding the
 * CA: failed, said so) and an order from ACME_DIRECTORY_URL (the server down or refusing: retrying, with backoff). A
 * DNS that did not answer changes nothing but the reason.
 */
export async function checkTrackingDomain(db: Db, id: number, dns: TrackingDns): Promise<void> {
  const d = await db.trackingDomain.findUnique({ where: { id } });
  if (!d) return;
  const cfg = config().tracking;
  const now = Date.now();
  const recheck = new Date(now + cfg.recheckMinutes * 60_000);
  const write = (data: Partial<TrackingDomain>) => db.trackingDomain.updateMany({ where: { id }, data: { checkedAt: new Date(), ...data } });
  let seen: string[];
  try {
    seen = await dns.cname(d.name);
  } catch (err) {
    if (!(err instanceof DnsUnavailable)) throw err;
    await write({ reason: `${err.message}; the status stays as it was until DNS answers`, nextCheckAt: recheck });
    return;
  }
  if (!seen.includes(cfg.hostname)) {
    const answered = seen.length ? `DNS answered CNAME ${seen.join(', ')}` : 'DNS has no CNAME for it';
    await write({ status: 'pending', seen, reason: `publish ${d.name} CNAME ${cfg.hostname}: ${answered}`, nextCheckAt: recheck });
    return;
  }
  // a certificate still valid: the domain is active again as soon as DNS shows the CNAME (it may have been pending meanwhile)
  const live = d.certificatePem !== null && d.notAfter !== null && d.notAfter.getTime() > now;
  if (!certificateDue(d, now)) {
    await write({ status: live ? 'active' : d.status, seen, reason: live ? null : d.reason, attempts: live ? 0 : d.attempts, nextCheckAt: new Date(Math.min(d.renewAt!.getTime(), now + cfg.recheckMinutes * 60_000)) });
    return;
  }
  if (!cfg.acmeDirectoryUrl) {
    await write({ status: live ? 'active' : 'issuing', seen, reason: 'ACME_DIRECTORY_URL is not set: no certificate can be ordered', nextCheckAt: recheck });
    return;
  }
  let refusal: string | null;
  try {
    refusal = await caaRefusal(dns, d.name, await caaIdentities());
  } catch (err) {
    if (err instanceof AcmeFailure) return retry(db, d, seen, live, err.message);
    if (!(err instanceof DnsUnavailable)) throw err;
    await write({ seen, reason: `${err.message}; the status stays as it was until DNS answers`, nextCheckAt: recheck });
    return;
  }
  if (refusal) {
    await write({ status: live ? 'active' : 'failed', seen, reason: refusal, nextCheckAt: recheck });
    return;
  }
  if (!live) await write({ status: 'issuing', seen, reason: 'ordering a certificate' });
  try {
    const issued = await orderCertificate(db, d.name);
    const renewAt = renewalTime(issued.notAfter, Date.now());
    await write({
      status: 'active',
      seen,
      reason: null,
      attempts: 0,
      certificatePem: issued.certificatePem,
      privateKeyEnc: encryptSecret(issued.privateKeyPem, config().secretKey),
      issuedAt: new Date(),
      notAfter: issued.notAfter,
      renewAt,
      nextCheckAt: new Date(Math.min(renewAt.getTime(), Date.now() + cfg.recheckMinutes * 60_000)),
    });
  } catch (err) {
    if (!(err instanceof AcmeFailure)) throw err;
    await retry(db, d, seen, live, err.message);
  }
}

/** An order that failed: tried again ACME_RETRY_BASE_MS later, each next time 4 times longer (at most 6 hours). */
async function retry(db: Db, d: TrackingDomain, seen: string[], live: boolean, why: string): Promise<void> {
  const attempts = d.attempts + 1;
  const delay = Math.min(config().tracking.acmeRetryBaseMs * 4 ** (attempts - 1), RETRY_MAX_MS);
  const at = new Date(Date.now() + delay);
  await db.trackingDomain.updateMany({
    where: { id: d.id },
    data: {
      status: live ? 'active' : 'retrying',
      seen,
      attempts,
      checkedAt: new Date(),
      nextCheckAt: at,
      reason: `${why}; attempt ${attempts}, next at ${at.toISOString()}${live ? ' (the current certificate is served meanwhile)' : ''}`,
    },
  });
}
