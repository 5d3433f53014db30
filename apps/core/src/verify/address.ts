import { domainToASCII } from 'node:url';

/** An address that passed the syntax check: its local part as written and its domain in ASCII (IDNA), lower case. */
export interface ParsedAddress {
  local: string;
  domain: string;
}

/** RFC 5322 atext, plus any non-ASCII character (RFC 6531: UTF-8 local parts). */
const ATOM = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~\u0080-\u{10FFFF}]+$/u;
/** RFC 5321 Quoted-string: printable ASCII but `"` and `\`, or a backslash pair; UTF-8 as RFC 6531 allows. */
const QUOTED = /^"(?:[\x20\x21\x23-\x5B\x5D-\x7E\u0080-\u{10FFFF}]|\\[\x20-\x7E])*"$/u;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

const octets = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * The syntax check (RFC 5321 and RFC 6531): a dot-atom or quoted local part of at most 64 octets, a domain of letters,
 * digits and hyphens once IDNA has made it ASCII (at least two labels, a top-level label that is not all digits), the
 * whole at most 254 octets. Answers the parts, or why the address is malformed.
 */
export function parseAddress(given: string): ParsedAddress | { reason: string } {
  const text = given.trim();
  const at = text.lastIndexOf('@');
  if (at < 0) return { reason: 'no @' };
  const local = text.slice(0, at);
  const rawDomain = text.slice(at + 1);
  if (!local) return { reason: 'nothing before the @' };
  if (!rawDomain) return { reason: 'no domain after the @' };
  if (octets(local) > 64) return { reason: 'the local part is longer than 64 octets' };
  if (!(QUOTED.test(local) || local.split('.').every((atom) => ATOM.test(atom)))) return { reason: `the local part "${local.slice(0, 64)}" is not a valid atom or quoted string` };
  if (rawDomain.startsWith('[')) return { reason: 'an address literal ([...]) is not a domain mail can be verified for' };
  const domain = domainToASCII(rawDomain.replace(/\.$/, '').toLowerCase());
  if (!domain) return { reason: `the domain "${rawDomain.slice(0, 100)}" is not a valid name (IDNA)` };
  const labels = domain.split('.');
  if (domain.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1)!)) {
    return { reason: `the domain "${rawDomain.slice(0, 100)}" is not a valid host name` };
  }
  if (octets(local) + 1 + domain.length > 254) return { reason: 'the address is longer than 254 octets' };
  return { local, domain };
}

/** Local parts that reach a team or a machine rather than a person: kept as risky for outreach and lists. */
const ROLE_PARTS = new Set([
  'abuse', 'admin', 'administrator', 'billing', 'careers', 'contact', 'contacts', 'enquiries', 'feedback', 'finance', 'hello', 'help',
  'helpdesk', 'hostmaster', 'hr', 'info', 'inquiries', 'jobs', 'legal', 'mail', 'mailer-daemon', 'marketing', 'media', 'newsletter',
  'no-reply', 'noreply', 'office', 'orders', 'postmaster', 'press', 'privacy', 'root', 'sales', 'security', 'service', 'support',
  'team', 'webmaster',
]);

/** A role local part: `info`, `sales+eu` (the tag after + is not the role). */
export const isRole = (local: string): boolean => ROLE_PARTS.has(local.toLowerCase().split('+')[0]!);

/** Webmail any person can sign up for: a flag only, never a reason for another result. */
const FREE_PROVIDERS = new Set([
  'aol.com', 'fastmail.com', 'gmail.com', 'gmx.com', 'gmx.de', 'gmx.net', 'googlemail.com', 'hotmail.co.uk', 'hotmail.com', 'hotmail.fr',
  'icloud.com', 'live.com', 'mac.com', 'mail.com', 'mail.ru', 'me.com', 'msn.com', 'outlook.com', 'proton.me', 'protonmail.com',
  'qq.com', 'web.de', 'yahoo.co.uk', 'yahoo.com', 'yahoo.fr', 'yandex.com', 'yandex.ru', 'zoho.com',
]);

export const isFree = (domain: string): boolean => FREE_PROVIDERS.has(domain);

/** The domain and each parent domain (`a.b.c` -> a.b.c, b.c), for lists that name a domain for its subdomains too. */
export function domainAndParents(domain: string): string[] {
  const labels = domain.split('.');
  return labels.slice(0, -1).map((_, i) => labels.slice(i).join('.'));
}
