import { authenticate } from 'mailauth';
import { dnsLookup } from '../../apps/core/src/domains/resolver';
import type { DomainRecord } from '../../apps/core/src/domains/records';
import type { ReceivedMail } from '../helpers/smtp-sink';
import { txt, type DnsServer, type ZoneRecord } from '../helpers/dns-server';

/** The records a domain's answer asks for, as the test's DNS server publishes them (long TXT values split). */
export function published(records: DomainRecord[], options: { dmarc?: string } = {}): ZoneRecord[] {
  return records.map((r) => {
    if (r.type === 'MX') return { type: 'MX', host: r.host, target: r.value.split(' ')[1]!, priority: Number(r.value.split(' ')[0]) };
    if (r.purpose === 'dmarc') return txt(r.host, options.dmarc ?? r.value);
    return txt(r.host, r.value);
  });
}

/** mailauth's verdict on an email as a receiver at 127.0.0.1 sees it, asking the test's DNS server. */
export async function receiverVerdict(dns: DnsServer, mail: ReceivedMail, sender: string) {
  // generous: a receiver's DNS on a busy test machine
  const resolver = dnsLookup({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 5000 }).raw;
  return authenticate(mail.raw, { ip: '127.0.0.1', helo: 'relay.test', mta: 'mx.receiver.test', sender, resolver: resolver as never });
}

/** Each DKIM signature's selector, algorithm and result. */
export function signatures(verdict: Awaited<ReturnType<typeof receiverVerdict>>) {
  return verdict.dkim.results.map((r) => ({ selector: r.selector, algorithm: (r as { algo?: string }).algo, result: r.status.result, domain: r.signingDomain }));
}
