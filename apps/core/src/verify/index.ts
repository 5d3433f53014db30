import { disposableEmailBlocklistSet } from 'disposable-email-domains-js';
import { config } from '../config';
import type { Db, Tx } from '../db';
import { dnsLookup, type DnsLookup } from '../domains/resolver';
import { redis, rkey } from '../redis';
import { domainAndParents, isFree, isRole, parseAddress } from './address';
import { mailRoute, type MailRoute } from './mail-domain';
import { MailboxProbe, type ProbeAnswer } from './probe';
import { addressHistory, type AddressHistory } from './repository';

export const VERIFY_RESULTS = ['deliverable', 'risky', 'undeliverable', 'unknown'] as const;
export type VerifyResult = (typeof VERIFY_RESULTS)[number];
/** What an add or an import does with the result: refuse undeliverable addresses, or only keep the result. */
export const VERIFY_MODES = ['block_undeliverable', 'flag'] as const;
export type VerifyMode = (typeof VERIFY_MODES)[number];

export interface VerifyChecks {
  syntax: boolean;
  /** the domain checked, in ASCII (IDNA); "" when the syntax fails */
  domain: string;
  /** mx, a (no MX, an address), null_mx, none, timeout (DNS gave no answer), or "" when the syntax fails */
  mx: string;
  disposable: boolean;
  role: boolean;
  free: boolean;
  suppressed: boolean;
  history: AddressHistory['history'];
  mailbox?: ProbeAnswer['mailbox'];
  catch_all?: boolean;
}

export interface Verification {
  email: string;
  result: VerifyResult;
  reasons: string[];
  checks: VerifyChecks;
}

/** Results are kept a day: per domain (where its mail goes) and per address (the probe's answer, catch-all included). */
const CACHE_SECONDS = 86_400;
/** Domains looked up at once by one call. */
const DNS_IN_FLIGHT = 16;

/**
 * Address verification (docs/verification.md): made once by a process's main and handed to its routes, MCP tools and
 * import runs. It holds the disposable domains (the package's list, read once), the resolver (DNS_SERVERS) and the
 * mailbox probe when VERIFY_PROBE_FROM and VERIFY_PROBE_HOST are set.
 */
export class Verifier {
  /** read on first use: a process that never verifies does not hold the list */
  private disposableDomains: Set<string> | null = null;
  private readonly dns: DnsLookup;
  private readonly probe: MailboxProbe | null;

  constructor(options: { dns?: DnsLookup; probe?: MailboxProbe | null } = {}) {
    this.dns = options.dns ?? dnsLookup();
    const probe = config().verifyProbe;
    this.probe = options.probe !== undefined ? options.probe : probe ? new MailboxProbe(probe) : null;
  }

  private get disposable(): Set<string> {
    this.disposableDomains ??= disposableEmailBlocklistSet();
    return this.disposableDomains;
  }

  /** Each address's verification, in the order given; the account's suppressions and bounces are read live. */
  async verify(db: Db | Tx, accountId: number, emails: string[]): Promise<Verification[]> {
    const parsed = emails.map((email) => ({ email, parts: parseAddress(email) }));
    const valid = parsed.flatMap((p) => ('reason' in p.parts ? [] : [{ email: p.email, key: p.email.trim().toLowerCase(), ...p.parts }]));
    const keys = [...new Set(valid.map((v) => v.key))];
    const [routes, known] = await Promise.all([
      this.domainFacts([...new Set(valid.map((v) => v.domain))]),
      keys.length ? addressHistory(db, accountId, keys) : Promise.resolve([]),
    ]);
    const history = new Map(known.map((h) => [h.email, h]));
    return Promise.all(
      parsed.map(async ({ email, parts }): Promise<Verification> => {
        if ('reason' in parts) {
          const checks: VerifyChecks = { syntax: false, domain: '', mx: '', disposable: false, role: false, free: false, suppressed: false, history: 'none' };
          return { email, result: 'undeliverable', reasons: [`malformed address: ${parts.reason}`], checks };
        }
        const key = email.trim().toLowerCase();
        const facts = routes.get(parts.domain)!;
        const past = history.get(key) ?? { suppressed: null, history: 'none' as const };
        const checks: VerifyChecks = {
          syntax: true,
          domain: parts.domain,
          mx: facts.mx,
          disposable: domainAndParents(parts.domain).some((d) => this.disposable.has(d)),
          role: isRole(parts.local),
          free: isFree(parts.domain),
          suppressed: past.suppressed !== null,
          history: past.history,
        };
        const probed = this.probe && facts.hosts.length && !past.suppressed && past.history !== 'hard_bounce' ? await this.mailbox(key, parts.domain, facts) : null;
        if (probed) {
          checks.mailbox = probed.mailbox;
          if (probed.catchAll !== undefined) checks.catch_all = probed.catchAll;
        }
        return { email, ...judge(checks, facts, past, probed), checks };
      }),
    );
  }

  /** Each domain's facts: a day's cache in Redis, else DNS (a few domains at a time); a DNS that did not answer is not cached. */
  private async domainFacts(domains: string[]): Promise<Map<string, MailRoute>> {
    const facts = new Map<string, MailRoute>();
    if (!domains.length) return facts;
    const cached = await redis().mget(domains.map((d) => rkey('verify', 'domain', d)));
    const missing: string[] = [];
    domains.forEach((d, i) => (cached[i] ? facts.set(d, JSON.parse(cached[i]!) as MailRoute) : missing.push(d)));
    let next = 0;
    const found: [string, MailRoute][] = [];
    const lookups = Array.from({ length: Math.min(DNS_IN_FLIGHT, missing.length) }, async () => {
      while (next < missing.length) {
        const domain = missing[next++]!;
        const route = await mailRoute(this.dns, domain);
        facts.set(domain, route);
        if (route.mx !== 'timeout') found.push([domain, route]);
      }
    });
    await Promise.all(lookups);
    if (found.length) {
      const pipeline = redis().pipeline();
      for (const [domain, route] of found) pipeline.set(rkey('verify', 'domain', domain), JSON.stringify(route), 'EX', CACHE_SECONDS);
      await pipeline.exec();
    }
    return facts;
  }

  /** The probe's answer for the address: a day's cache, else a conversation with its first MX (with the catch-all question). */
  private async mailbox(address: string, domain: string, facts: MailRoute): Promise<ProbeAnswer | null> {
    const cacheKey = rkey('verify', 'address', address);
    const cached = await redis().get(cacheKey);
    if (cached) return JSON.parse(cached) as ProbeAnswer;
    // the MX's address through the same resolver (DNS_SERVERS), never the system's
    const ip = (await this.dns.addresses(facts.hosts[0]!).catch(() => []))[0];
    if (!ip) return { mailbox: 'unknown', reply: `${facts.hosts[0]} has no address` };
    const answer = await this.probe!.probe({ name: facts.hosts[0]!, ip }, address, domain);
    // greylisting and silence are answers of the moment: asked again next time
    if (answer && answer.mailbox !== 'unknown') await redis().set(cacheKey, JSON.stringify(answer), 'EX', CACHE_SECONDS);
    return answer;
  }
}

/** docs/verification.md, "Results": undeliverable beats unknown, unknown beats risky, risky beats deliverable; every reason is listed. */
function judge(checks: VerifyChecks, facts: MailRoute, past: Pick<AddressHistory, 'suppressed' | 'history'>, probed: ProbeAnswer | null): Pick<Verification, 'result' | 'reasons'> {
  const dead: string[] = [];
  const doubt: string[] = [];
  const risk: string[] = [];
  if (facts.mx === 'null_mx') dead.push(`${checks.domain} publishes a null MX (RFC 7505): it takes no mail`);
  if (facts.mx === 'none') dead.push(`${checks.domain} has no MX record and no address`);
  if (facts.mx === 'timeout') doubt.push(facts.error);
  if (past.suppressed) dead.push(`suppressed in this account (${past.suppressed})`);
  if (past.history === 'hard_bounce') dead.push('a past hard bounce from this address');
  if (past.history === 'soft_bounce') risk.push('a past soft bounce from this address');
  if (checks.disposable) risk.push(`${checks.domain} is a disposable email domain`);
  if (checks.role) risk.push('a role address, not a person');
  if (probed?.mailbox === 'rejected') dead.push(`the mail server refused the mailbox: ${probed.reply}`);
  if (probed?.mailbox === 'unknown') doubt.push(`the mail server gave no answer about the mailbox: ${probed.reply}`);
  if (probed?.catchAll) risk.push(`${checks.domain} accepts any address (catch-all): the mailbox cannot be proven`);
  if (dead.length) return { result: 'undeliverable', reasons: [...dead, ...doubt, ...risk] };
  if (doubt.length) return { result: 'unknown', reasons: [...doubt, ...risk] };
  if (risk.length) return { result: 'risky', reasons: risk };
  return { result: 'deliverable', reasons: [] };
}
