import { domainToASCII, domainToUnicode } from 'node:url';
import { BadRequest } from '../errors';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * A sending domain's name as stored: trimmed, lower case, without a final dot, IDNA names as punycode (`bücher.example`
 * becomes `xn--bcher-kva.example`). Refuses what is not a domain name: an address, a URL, an IP address, one label, a
 * label over 63 characters or starting or ending with a hyphen, a name over 253 characters.
 */
export function domainName(raw: string): string {
  const text = raw.trim().replace(/\.$/, '');
  if (text === '' || /[\s@/:\\?#*]/.test(text)) throw new BadRequest(`name: "${raw}" is not a domain name`);
  const ascii = domainToASCII(text.toLowerCase());
  if (!ascii || ascii.length > 253) throw new BadRequest(`name: "${raw}" is not a domain name`);
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) {
    throw new BadRequest(`name: "${raw}" is not a domain name (a name like example.com, without a scheme or an address)`);
  }
  return ascii;
}

/** The name as people read it: punycode labels shown in their own script. */
export function displayName(ascii: string): string {
  return domainToUnicode(ascii) || ascii;
}

/** The domain of an email address, lower case (IDNA as punycode); empty when there is none. */
export function domainOfAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return '';
  const domain = address.slice(at + 1).trim().toLowerCase();
  return domainToASCII(domain) || domain;
}
