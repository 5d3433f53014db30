import dns from 'node:dns';
import net from 'node:net';
import os from 'node:os';
import { expandIpv6 } from '../ip';

/**
 * The one outbound-fetch guard, for every request the service makes to an address a customer chose: the link checker's
 * page fetches and webhook deliveries (docs/hardening.md, "Outbound requests"). Only globally routable unicast
 * addresses are fetched: never the IANA special-purpose ranges (IPv4 and IPv6 registries: this host, private networks,
 * shared and link-local space (cloud metadata at 169.254.169.254), documentation, benchmarking, 6to4 relays, multicast,
 * reserved), no IPv6 address outside global unicast (2000::/3), never an IPv6 address that embeds one of those
 * (IPv4-mapped, NAT64, 6to4), and never an address of this host's own interfaces. The address is checked at connect
 * time, on every redirect hop, and the socket connects to exactly the address checked (no second resolution: DNS
 * rebinding cannot slip in between).
 */
const special = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (carrier-grade NAT)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.31.196.0', 24], // AS112
  ['192.52.193.0', 24], // AMT
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['192.175.48.0', 24], // direct delegation AS112
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the limited broadcast 255.255.255.255
] as const) {
  special.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID...)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // segment routing SIDs
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  special.addSubnet(network, prefix, 'ipv6');
}

/**
 * The IPv4 address an IPv6 address carries and is routed to: IPv4-mapped (::ffff:0:0/96), the well-known NAT64 prefix
 * (64:ff9b::/96, RFC 6052) and 6to4 (2002::/16). Other prefixes that embed one (IPv4-translated ::ffff:0:0:0/96, the
 * local-use NAT64 64:ff9b:1::/48) are outside global unicast and refused whatever they carry.
 */
function embeddedIpv4(words: number[]): string | null {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return null;
}

/** This host's own interface addresses (any of them reaches the host itself). */
function ownAddresses(): Set<string> {
  const own = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) own.add(a.address.toLowerCase().split('%')[0]!);
  return own;
}

/**
 * True for an address the service may connect to on a customer's behalf: globally routable unicast, not one of `own`
 * (this host's interface addresses).
 */
export function isPublicAddress(address: string, own: ReadonlySet<string> = ownAddresses()): boolean {
  const family = net.isIP(address);
  if (!family) return false; // not an address at all: refuse rather than guess
  if (own.has(address.toLowerCase())) return false;
  if (family === 4) return !special.check(address, 'ipv4');
  const words = expandIpv6(address);
  if (!words) return false;
  const embedded = embeddedIpv4(words);
  if (embedded !== null) return isPublicAddress(embedded, own);
  // global unicast is 2000::/3, the only block IANA allocates for routing: the rest of the space is special or unassigned
  if ((words[0]! & 0xe000) !== 0x2000) return false;
  return !special.check(address, 'ipv6');
}

/**
 * Which addresses a request may reach: public ones always; every address when `allowPrivate` (ALLOW_PRIVATE_FETCH for
 * the link checker, WEBHOOK_ALLOW_PRIVATE for webhooks: LAN installs and tests); and the exact addresses of `allow`
 * (a test's own loopback server, while everything else stays refused).
 */
export interface OutboundPolicy {
  allowPrivate: boolean;
  allow?: readonly string[];
}

export const mayConnect = (address: string, policy: OutboundPolicy) => policy.allowPrivate || policy.allow?.includes(address) === true || isPublicAddress(address);

/** A destination the guard refused; `message` is the detail for the log, never for the customer. */
export class RefusedAddress extends Error {}

/** A URL's host written as an address never goes through a lookup, so it is judged here. */
export function refuseLiteralAddress(hostname: string, policy: OutboundPolicy): void {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !mayConnect(host, policy)) throw new RefusedAddress(`${host} is not a public address`);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request and https.request: resolves the name, refuses it when any of its addresses may not be
 * connected to, and hands the socket the addresses it checked, so the connection goes to exactly those.
 */
export function guardedLookup(policy: OutboundPolicy) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const refused = addresses.find((a) => !mayConnect(a.address, policy));
      if (refused) return callback(new RefusedAddress(`${hostname} resolves to ${refused.address}, not a public address`), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
