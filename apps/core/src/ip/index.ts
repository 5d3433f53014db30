import net from 'node:net';

/** The eight 16-bit words of an IPv6 address (a zone index dropped, a dotted IPv4 tail read as two words), or null. */
export function expandIpv6(address: string): number[] | null {
  if (!net.isIPv6(address)) return null;
  let text = address.split('%')[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -v4[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  const all = tail === undefined ? left : [...left, ...Array(missing).fill('0'), ...right];
  return all.length === 8 ? all.map((w) => parseInt(w || '0', 16)) : null;
}

/**
 * Who a per-address limit counts a request against: an IPv4 address as it is (an IPv4-mapped IPv6 one, as Node reports
 * IPv4 clients of a dual-stack socket, as its IPv4 address), an IPv6 address by its /64, the smallest block a site is
 * given: one host can pick any address of its /64, so counting per address would give it 2^64 fresh allowances.
 */
export function clientKey(address: string): string {
  const words = expandIpv6(address);
  if (!words) return address;
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return `${words[6]! >> 8}.${words[6]! & 255}.${words[7]! >> 8}.${words[7]! & 255}`;
  return `${words.slice(0, 4).map((w) => w.toString(16)).join(':')}::/64`;
}
