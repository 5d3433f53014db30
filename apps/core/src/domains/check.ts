import net from 'node:net';
import { lazy } from '../lazy';
import { DnsUnavailable, type DnsLookup } from './resolver';
import { expectedRecords, joinTxt, tags, type DomainRecord, type RecordContext } from './records';

/** mailauth's SPF evaluator, loaded by the first check (the API process that checks no domain never carries it). */
const spf = lazy(() => (require('mailauth/lib/spf') as typeof import('mailauth/lib/spf')).spf);

export interface CheckResult {
  records: DomainRecord[];
  /** every required record found */
  passed: boolean;
  /** what is missing or wrong, in words (null when passed) */
  problem: string | null;
}

/**
 * Asks DNS for every record of the domain and says, for each, found, missing or wrong, with what DNS answered. DKIM:
 * a record at the selector carrying this key (spaces, case of tag names and split strings do not matter). SPF: the one
 * `v=spf1` record, evaluated for each relay's address (includes followed, at most 10 lookups, RFC 7208), must pass.
 * DMARC: one `v=DMARC1` record (its absence is advice, not a failure). Throws DnsUnavailable when DNS did not answer
 * a question definitely (timeout, SERVFAIL): nothing can be concluded then.
 */
export async function checkRecords(dns: DnsLookup, context: RecordContext): Promise<CheckResult> {
  const records = expectedRecords(context);
  await Promise.all(
    records.map(async (record) => {
      if (record.purpose === 'dkim') await checkDkim(dns, record);
      else if (record.purpose === 'spf') await checkSpf(dns, record, context);
      else if (record.purpose === 'dmarc') await checkDmarc(dns, record);
      else await checkMx(dns, record);
    }),
  );
  return { records, ...summarize(records) };
}

/** Whether every required record is found, and what is missing or wrong in words. */
export function summarize(records: DomainRecord[]): { passed: boolean; problem: string | null } {
  const failing = records.filter((r) => r.required && r.status !== 'found');
  const problem = failing.length ? failing.map((r) => `${r.purpose === 'dkim' ? `DKIM (${r.algorithm === 'rsa' ? 'RSA' : 'Ed25519'})` : 'SPF'} ${r.status} at ${r.host}${r.problem ? `: ${r.problem}` : ''}`).join('; ') : null;
  return { passed: failing.length === 0, problem };
}

async function checkDkim(dns: DnsLookup, record: DomainRecord): Promise<void> {
  const answers = (await dns.txt(record.host)).map(joinTxt);
  record.seen = answers;
  const want = tags(record.value);
  const keys = answers.map(tags).filter((t) => t.has('p'));
  if (!answers.length) {
    record.status = 'missing';
    record.problem = `no TXT record at ${record.host}`;
  } else if (keys.some((t) => t.get('p')!.replace(/\s+/g, '') === want.get('p') && (t.get('k') ?? 'rsa').toLowerCase() === want.get('k'))) {
    record.status = 'found';
  } else {
    record.status = 'wrong';
    record.problem = keys.length ? 'the published key is not this domain\'s key (copy the value again, whole)' : 'the TXT record there is not a DKIM key (no p= tag)';
  }
}

async function spfRecords(dns: DnsLookup, host: string): Promise<string[]> {
  return (await dns.txt(host)).map((r) => joinTxt(r).trim()).filter((t) => /^v=spf1(\s|$)/i.test(t));
}

async function checkSpf(dns: DnsLookup, record: DomainRecord, context: RecordContext): Promise<void> {
  const found = await spfRecords(dns, context.domain);
  record.seen = found;
  if (!found.length) {
    record.status = 'missing';
    record.problem = 'no v=spf1 record on the domain';
    return;
  }
  if (found.length > 1) {
    record.status = 'wrong';
    record.problem = `${found.length} v=spf1 records: receivers treat several as an SPF error (permerror); merge them into one`;
    return;
  }
  const addresses = await relayAddresses(dns, context.relays);
  if (!addresses.length) {
    if (context.spfInclude && new RegExp(`(^|\\s)\\+?include:${context.spfInclude.replace(/\./g, '\\.')}(\\s|$)`, 'i').test(found[0]!)) {
      record.status = 'found';
      return;
    }
    record.status = 'wrong';
    record.problem = 'no mailbox of the account sends from this domain yet: add one, so that its relay can be checked against the record';
    return;
  }
  for (const ip of addresses) {
    const result = await spf()({ sender: `postmaster@${context.domain}`, ip, helo: context.domain, mta: 'check', resolver: dns.raw as never });
    const answer = result.status.result;
    if (answer === 'temperror') throw new DnsUnavailable(context.domain, 'SPF', 'ETIMEOUT');
    if (answer !== 'pass') {
      record.status = 'wrong';
      const lookups = (result as { lookups?: { count: number; limit: number } }).lookups;
      const detail = answer === 'permerror' ? String(result.status.comment ?? '').replace(/^check: /, '') : `${ip} is not permitted`;
      record.problem = `SPF answers ${answer} for the relay ${ip}: ${detail}${lookups && lookups.count > lookups.limit ? ` (more than ${lookups.limit} DNS lookups)` : ''}`;
      return;
    }
  }
  record.status = 'found';
}

/** The relays' addresses: an address as written, a name through DNS (its A and AAAA records). */
async function relayAddresses(dns: DnsLookup, relays: string[]): Promise<string[]> {
  const all = await Promise.all(relays.map(async (r) => (net.isIP(r) ? [r] : dns.addresses(r))));
  return [...new Set(all.flat())];
}

async function checkDmarc(dns: DnsLookup, record: DomainRecord): Promise<void> {
  const found = (await dns.txt(record.host)).map((r) => joinTxt(r).trim()).filter((t) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(t));
  record.seen = found;
  if (!found.length) {
    record.status = 'missing';
    record.problem = 'recommended: without DMARC, receivers such as Gmail and Yahoo treat bulk mail with suspicion';
  } else if (found.length > 1) {
    record.status = 'wrong';
    record.problem = `${found.length} DMARC records: receivers ignore them all; keep one`;
  } else {
    const policy = tags(found[0]!).get('p');
    record.status = policy ? 'found' : 'wrong';
    record.problem = policy ? null : 'the DMARC record has no p= policy';
  }
}

/**
 * An MX record (the VERP return path's, an inbound domain's): found when the host our record names is among the MX
 * records DNS gives, at the best preference (a lower number elsewhere would take the mail first).
 */
async function checkMx(dns: DnsLookup, record: DomainRecord): Promise<void> {
  const target = record.value.split(' ')[1]!.toLowerCase();
  const found = await dns.mx(record.host);
  record.seen = found.map((mx) => `${mx.priority} ${mx.exchange}`);
  const ours = found.filter((mx) => mx.exchange.toLowerCase().replace(/\.$/, '') === target);
  const best = Math.min(...found.map((mx) => mx.priority));
  if (!found.length) {
    record.status = 'missing';
    record.problem = `no MX record at ${record.host}`;
  } else if (!ours.length) {
    record.status = 'wrong';
    record.problem = `the MX should name ${target}`;
  } else if (ours.every((mx) => mx.priority > best)) {
    const first = found.filter((mx) => mx.priority === best).map((mx) => mx.exchange);
    record.status = 'wrong';
    record.problem = `${first.join(', ')} (preference ${best}) comes before ${target}: give ${target} the lowest preference`;
  } else {
    record.status = 'found';
  }
}
