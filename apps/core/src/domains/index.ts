import type { Domain, DomainKey } from '../../../../generated/prisma/client';
import { requireAccount } from '../accounts';
import { config } from '../config';
import type { Db, Tx } from '../db';
import { Conflict, NotFound } from '../errors';
import { emitEvent } from '../events';
import { checkRecords, summarize, type CheckResult } from './check';
import { generateKeyPairs } from './keys';
import { displayName, domainName, domainOfAddress } from './names';
import { expectedRecords, type DomainRecord, type RecordContext } from './records';
import { lockDomain } from './repository';
import { DnsUnavailable, dnsLookup, type DnsLookup } from './resolver';
import { accountWhere, type AccountScope } from '../account-scope';

export { domainName, displayName, domainOfAddress } from './names';

/** The answer shape of a domain (docs/domains.md); private keys never appear in it. */
export interface DomainView {
  id: number;
  account: number;
  /** lower case, punycode for IDNA names; `display_name` is the same in its own script */
  name: string;
  display_name: string;
  status: 'pending' | 'verified' | 'failed';
  /** what is missing, or why the last check could not conclude; null when verified and checked */
  reason: string | null;
  records: DomainRecord[];
  /** its mail is taken by the MX (docs/mx.md) once `mx_found_at` is set */
  inbound: boolean;
  /** when a check first found the inbound domain's MX record: the MX takes its mail from then on (null: refused 550) */
  mx_found_at: Date | null;
  dkim: { selector: string; algorithm: 'rsa' | 'ed25519'; state: string }[];
  checked_at: Date | null;
  verified_at: Date | null;
  created_at: Date;
}

type DomainWithKeys = Domain & { keys: DomainKey[] };

/** Old key pairs are dropped this long after they stopped signing (they are listed as removable after 7 days). */
const RETIRED_DROP_MS = 30 * 24 * 3600_000;

export function domainView(d: DomainWithKeys): DomainView {
  const keys = [...d.keys].sort((a, b) => a.id - b.id);
  return {
    id: d.id,
    account: d.accountId,
    name: d.name,
    display_name: displayName(d.name),
    status: d.status,
    reason: d.reason,
    records: d.records as unknown as DomainRecord[],
    inbound: d.inbound,
    mx_found_at: d.inboundMxFoundAt,
    dkim: keys.flatMap((k) => [
      { selector: `${k.selector}r`, algorithm: 'rsa' as const, state: k.state },
      { selector: `${k.selector}e`, algorithm: 'ed25519' as const, state: k.state },
    ]),
    checked_at: d.checkedAt,
    verified_at: d.verifiedAt,
    created_at: d.createdAt,
  };
}

type SendingMailbox = { address: string; smtpHost: string; imapHost: string | null; returnPath: string };

/** An account's mailboxes as the records need them; `MailboxMemo` shares them across one round of checks. */
export type MailboxMemo = Map<number, Promise<SendingMailbox[]>>;

function accountMailboxes(db: Tx, accountId: number, memo?: MailboxMemo): Promise<SendingMailbox[]> {
  const read = () => db.mailbox.findMany({ where: { accountId }, select: { address: true, smtpHost: true, imapHost: true, returnPath: true } });
  if (!memo) return read();
  if (!memo.has(accountId)) memo.set(accountId, read());
  return memo.get(accountId)!;
}

/** The relays and VERP return path of the account's mailboxes on the domain (else all its mailboxes' relays). */
async function recordContext(db: Tx, d: DomainWithKeys, memo?: MailboxMemo): Promise<RecordContext> {
  const mailboxes = await accountMailboxes(db, d.accountId, memo);
  const own = mailboxes.filter((m) => domainOfAddress(m.address) === d.name);
  const relays = [...new Set((own.length ? own : mailboxes).map((m) => m.smtpHost.toLowerCase()))].sort();
  const verp = own.find((m) => m.returnPath === 'verp');
  const keys = [...d.keys].sort((a, b) => a.id - b.id);
  return {
    domain: d.name,
    keys: keys.map((k) => ({ selector: k.selector, state: k.state, rsaPublicKey: k.rsaPublicKey, ed25519PublicKey: k.ed25519PublicKey, retiredAt: k.retiredAt })),
    relays,
    spfInclude: config().spfInclude,
    returnPathTarget: verp ? config().returnPathHost || verp.imapHost || verp.smtpHost : null,
    inboundTarget: d.inbound ? config().mx.hostname : null,
  };
}

/** Expected records with the statuses the last check saw for the same record (same host and value). */
function withLastStatuses(expected: DomainRecord[], last: DomainRecord[]): DomainRecord[] {
  return expected.map((r) => {
    const seen = last.find((l) => l.host === r.host && l.value === r.value && l.type === r.type);
    return seen ? { ...r, status: seen.status, seen: seen.seen, problem: seen.problem } : r;
  });
}

async function load(db: Tx, id: number, account?: number): Promise<DomainWithKeys> {
  const d = await db.domain.findUnique({ where: { id }, include: { keys: true } });
  // another account's domain is as unknown as a missing one
  if (!d || (account !== undefined && d.accountId !== account)) throw new NotFound(`no domain with id ${id}${account !== undefined ? ` in account ${account}` : ''}`);
  return d;
}

/** POST /admin/api/domains: a new domain of the account with its first key pair; checked by the worker at once. */
export async function addDomain(db: Db, input: { account: number; name: string }): Promise<DomainView> {
  const name = domainName(input.name);
  await requireAccount(db, input.account);
  const existing = await db.domain.findUnique({ where: { accountId_name: { accountId: input.account, name } } });
  if (existing) throw new Conflict(`the account already has the domain ${name} (id ${existing.id})`);
  const pair = generateKeyPairs();
  const created = await db.domain.create({
    data: { accountId: input.account, name, keys: { create: { ...pair, state: 'active', activatedAt: new Date() } } },
    include: { keys: true },
  });
  const records = expectedRecords(await recordContext(db, created));
  const updated = await db.domain.update({
    where: { id: created.id },
    data: { records: records as never, reason: 'not checked yet: publish the records, then check' },
    include: { keys: true },
  });
  return domainView(updated);
}

export async function listDomains(db: Tx, account?: AccountScope): Promise<DomainView[]> {
  const rows = await db.domain.findMany({ where: accountWhere(account), include: { keys: true }, orderBy: { id: 'asc' } });
  return rows.map(domainView);
}

export async function getDomain(db: Tx, id: number, account?: number): Promise<DomainView> {
  return domainView(await load(db, id, account));
}

export async function removeDomain(db: Tx, id: number, account?: number): Promise<void> {
  await load(db, id, account);
  await db.domain.delete({ where: { id } });
}

/**
 * POST /admin/api/domains/:id/rotate: a new key pair published beside the current one. Signing moves to it at the first
 * check that finds both its records; the old pair is then listed as removable 7 days later.
 */
export async function rotateDomain(db: Db, id: number, account?: number): Promise<DomainView> {
  const d = await load(db, id, account);
  const waiting = d.keys.find((k) => k.state === 'next');
  if (waiting) throw new Conflict(`the key pair ${waiting.selector} already waits for DNS: publish its two DKIM records and check the domain`);
  await db.domainKey.create({ data: { domainId: id, ...generateKeyPairs(), state: 'next' } });
  return refreshRecords(db, id);
}

/**
 * The domain's records laid out again after what they depend on changed (a new key pair, the domain turned inbound),
 * each keeping what the last check saw of it; a new record is missing until the next check.
 */
export async function refreshRecords(db: Tx, id: number): Promise<DomainView> {
  const d = await load(db, id);
  const records = withLastStatuses(expectedRecords(await recordContext(db, d)), d.records as unknown as DomainRecord[]);
  return domainView(await db.domain.update({ where: { id }, data: { records: records as never }, include: { keys: true } }));
}

/**
 * POST /admin/api/domains/:id/verify: check now, with the same rules as the periodic check. DNS is asked first, outside
 * any transaction; `commit` runs the writes of its outcome (an audited change's transaction: its entry written with them).
 */
export async function verifyDomain(db: Db, id: number, options: { account?: number; dns?: DnsLookup; commit?: (work: (db: Db) => Promise<DomainView>) => Promise<DomainView> } = {}): Promise<DomainView> {
  await load(db, id, options.account);
  const looked = await lookUpDomain(db, id, options.dns ?? dnsLookup());
  const apply = async (tx: Db) => {
    if (looked) await applyDomainCheck(tx, id, looked);
    return domainView(await load(tx, id));
  };
  return options.commit ? options.commit(apply) : apply(db);
}

/** What DNS showed of a domain's records, asked outside any transaction (or that it did not answer). */
interface Looked {
  before: Domain & { keys: DomainKey[] };
  result: CheckResult | DnsUnavailable;
}

async function lookUpDomain(db: Db, id: number, dns: DnsLookup, memo?: MailboxMemo): Promise<Looked | null> {
  const before = await db.domain.findUnique({ where: { id }, include: { keys: true } });
  if (!before) return null;
  try {
    return { before, result: await checkRecords(dns, await recordContext(db, before, memo)) };
  } catch (err) {
    if (!(err instanceof DnsUnavailable)) throw err;
    return { before, result: err };
  }
}

/**
 * One check of a domain: asks DNS (outside any transaction), then, with the row locked, moves signing to a waiting key
 * pair DNS now shows, and applies the outcome: all required records found makes it verified (`domain.verified` when
 * it was not); a verified domain failing two checks in a row becomes failed (`domain.failed`); a DNS that did not
 * answer changes no status and keeps the reason.
 */
export async function checkDomain(db: Db, id: number, dns: DnsLookup, memo?: MailboxMemo): Promise<void> {
  const looked = await lookUpDomain(db, id, dns, memo);
  if (looked) await applyDomainCheck(db, id, looked);
}

/** The outcome of a check written, with the row locked (`checkDomain`'s rules). */
async function applyDomainCheck(db: Db, id: number, { before, result }: Looked): Promise<void> {
  const next = new Date(Date.now() + config().domainRecheckHours * 3600_000);
  await db.$transaction(async (tx) => {
    const d = await lockDomain(tx, id);
    if (!d) return;
    if (result instanceof DnsUnavailable) {
      await tx.domain.update({ where: { id }, data: { reason: `${result.message}; the status stays as it was until DNS answers`, checkedAt: new Date(), nextCheckAt: next } });
      return;
    }
    let check = result;
    const waiting = before.keys.find((k) => k.state === 'next');
    const shown = (selector: string) => check.records.filter((r) => r.purpose === 'dkim' && r.selector?.startsWith(selector) && r.selector.length === selector.length + 1);
    if (waiting && shown(waiting.selector).length === 2 && shown(waiting.selector).every((r) => r.status === 'found')) {
      const now = new Date();
      // only if no other check moved it meanwhile
      const moved = await tx.domainKey.updateMany({ where: { id: waiting.id, state: 'next' }, data: { state: 'active', activatedAt: now } });
      if (moved.count) {
        await tx.domainKey.updateMany({ where: { domainId: id, state: 'active', id: { not: waiting.id } }, data: { state: 'retired', retiredAt: now } });
        check = reclassify(check, await recordContext(tx, await tx.domain.findUniqueOrThrow({ where: { id }, include: { keys: true } })));
      }
    }
    const dropBefore = new Date(Date.now() - RETIRED_DROP_MS);
    if (before.keys.some((k) => k.state === 'retired' && k.retiredAt && k.retiredAt < dropBefore)) {
      await tx.domainKey.deleteMany({ where: { domainId: id, state: 'retired', retiredAt: { lt: dropBefore } } });
    }
    const failures = check.passed ? 0 : d.status === 'verified' ? d.failures + 1 : 0;
    const status = check.passed ? 'verified' : d.status === 'verified' && failures >= 2 ? 'failed' : d.status;
    // an inbound domain's mail is taken from the first check that finds its MX record on (docs/mx.md, "DNS")
    const mxFound = check.records.some((r) => r.purpose === 'inbound' && r.status === 'found');
    const updated = await tx.domain.update({
      where: { id },
      data: {
        ...(mxFound && d.inbound && !d.inboundMxFoundAt ? { inboundMxFoundAt: new Date() } : {}),
        status,
        failures,
        records: check.records as never,
        reason: check.problem,
        checkedAt: new Date(),
        nextCheckAt: next,
        ...(status === 'verified' && d.status !== 'verified' ? { verifiedAt: new Date() } : {}),
      },
    });
    if (status !== d.status && status !== 'pending') {
      await emitEvent(tx, before.accountId, status === 'verified' ? 'domain.verified' : 'domain.failed', {
        domain: { id, account: before.accountId, name: before.name, display_name: displayName(before.name), status, previous: d.status, reason: updated.reason, checked_at: updated.checkedAt, verified_at: updated.verifiedAt },
      });
    }
  });
}

/** The check's findings laid over the records of the keys as they now stand (after signing moved to a new pair). */
function reclassify(check: CheckResult, context: RecordContext): CheckResult {
  const records = withLastStatuses(expectedRecords(context), check.records);
  return { records, ...summarize(records) };
}
