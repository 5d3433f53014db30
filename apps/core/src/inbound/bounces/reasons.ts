import { PHRASES, STATUS_REASON } from './keywords';
import { aboutSender, meaningOf, saysGone } from './meaning';

/**
 * The reason of one failure, named as sisimai names them (docs/inbound.md), from the diagnostic text, the enhanced
 * status, the SMTP command it answered and the report's Action. The order of the checks follows sisimai's
 * (reason/find.go, BSD 2-Clause); the phrases are its own (keywords.json).
 */
export const REASONS = [
  'userunknown', 'hostunknown', 'hasmoved', 'notaccept', 'suspend',
  'mailboxfull', 'expired', 'systemfull', 'onhold', 'undefined',
  'mesgtoobig', 'exceedlimit', 'blocked', 'spamdetected', 'virusdetected', 'policyviolation', 'rejected', 'norelaying', 'securityerror',
  'authfailure', 'requireptr', 'networkerror', 'systemerror', 'toomanyconn', 'ratelimited', 'contenterror', 'syntaxerror',
  'mailererror',
] as const;
export type Reason = (typeof REASONS)[number];

/**
 * dead: suppressed at once; mailbox: suppressed after SOFT_BOUNCE_LIMIT (`suspend` among them: an account disabled is
 * not an address that does not exist, its owner may have it enabled again); not_address: never suppresses
 * (`exceedlimit`, a message over the recipient's size limit, among them: a smaller one gets through).
 */
export type ReasonClass = 'dead' | 'mailbox' | 'not_address';

const DEAD = new Set<Reason>(['userunknown', 'hostunknown', 'hasmoved', 'notaccept']);
const MAILBOX = new Set<Reason>(['mailboxfull', 'suspend', 'expired', 'systemfull', 'onhold', 'undefined']);

export function reasonClass(reason: Reason): ReasonClass {
  return DEAD.has(reason) ? 'dead' : MAILBOX.has(reason) ? 'mailbox' : 'not_address';
}

/** sisimai's names that our vocabulary folds into another */
const FOLD: Record<string, Reason> = {
  badreputation: 'blocked',
  failedstarttls: 'securityerror',
  notcompliantrfc: 'contenterror',
  speeding: 'ratelimited',
  filtered: 'onhold',
  suppressed: 'onhold',
};
const fold = (name: string): Reason | null =>
  FOLD[name] ?? ((REASONS as readonly string[]).includes(name) ? (name as Reason) : null);

const REJECTED_IS_NOT = ['5.1.0 address rejected', 'recipient address rejected', 'sender ip address rejected'];

/** Are the pieces found in this order in the text? (sisimai's string.Aligned) */
function aligned(text: string, pieces: string[]): boolean {
  let at = 0;
  for (const p of pieces) {
    const i = text.indexOf(p, at);
    if (i < 0) return false;
    at = i + p.length;
  }
  return true;
}

/** Phrases of ours, seen in the corpus, that sisimai's lists lack (its own modules catch these by format). */
const OURS: Record<string, string[]> = {
  userunknown: [
    "address couldn't be found", 'not listed in domino directory', 'not listed in public name & address book',
    'invalid final delivery userid', 'no valid recipients for this mm', 'the recipient name is not recognized',
    'recipient not found by smtp address lookup', 'unknown recipient', 'recipient rejected',
  ],
  hostunknown: ['host unknown', 'domain not found', 'no such domain', 'name or service not known', 'dns lookup failure: host'],
  notaccept: ['indicated no smtp service', 'null mx'],
  // a link to a blocklist's lookup of the sending address
  blocked: ['spamhaus.org/query/bl'],
  spamdetected: ['rejected as spam'],
  speeding: ['sent to too many recipients'],
};

/** Does the lower-cased text carry one of sisimai's phrases for `name`? */
export function includedIn(name: string, text: string): boolean {
  const list = PHRASES[name];
  if (!list || !text) return false;
  if (name === 'rejected' && REJECTED_IS_NOT.some((p) => text.includes(p))) return false;
  if (list.index.some((p) => text.includes(p))) return true;
  if (OURS[name]?.some((p) => text.includes(p))) return true;
  return list.pairs.some((p) => aligned(text, p));
}

/** sisimai's name for an enhanced status: 5.1.1 -> userunknown ('' when the table has none) */
export function statusName(status: string | null): string {
  if (!status) return '';
  return STATUS_REASON[status] ?? '';
}

const RETRY = new Set(['undefined', 'onhold', 'systemerror', 'securityerror', 'expired', 'networkerror', 'hostunknown', 'userunknown']);

export interface Failure {
  diagnostic: string;
  status: string | null;
  /** RCPT, MAIL, DATA, HELO, EHLO, CONN or '' */
  command: string;
  /** the report's Action (failed, delayed...) or '' */
  action: string;
  /** a reason the family's reader already knows from the format itself */
  known?: string;
  /** the report was written by a filtering appliance (gateways.ts) */
  fromGateway?: boolean;
}

type Probe = (text: string, f: Failure, sname: string) => boolean;
const keyword = (name: string): Probe => (text, _f, sname) => sname === name || includedIn(name, text);

const PROBES: [string, Probe][] = [
  ['mailboxfull', keyword('mailboxfull')],
  ['mesgtoobig', keyword('mesgtoobig')],
  ['exceedlimit', keyword('exceedlimit')],
  ['suspend', keyword('suspend')],
  ['hasmoved', (text) => includedIn('hasmoved', text)],
  ['norelaying', keyword('norelaying')],
  ['authfailure', keyword('authfailure')],
  [
    'userunknown',
    (text, f, sname) => {
      if (sname === 'suspend') return false;
      // x.1.1 is a dead address unless the words say another reason (a filter's refusal, a rate limit among them)
      if (sname === 'userunknown') return !['norelaying', 'blocked', 'mailboxfull', 'hasmoved', 'rejected', 'notaccept', 'filtered', 'speeding', 'mailererror'].some((r) => includedIn(r, text));
      // without RCPT, a status that says otherwise (RFC 3463: x.2.x the mailbox is disabled or full, x.3.x the mail
      // system, x.7.x policy) wins
      if (f.command === '' && /^5\.[237]\./.test(f.status ?? '')) return false;
      return includedIn('userunknown', text) && (f.command === 'RCPT' || f.command === '');
    },
  ],
  [
    'filtered',
    (text, f, sname) => {
      if (sname === 'suspend') return false;
      if (sname === 'filtered') return includedIn('userunknown', text) || includedIn('filtered', text);
      if (['CONN', 'EHLO', 'HELO', 'MAIL', 'RCPT'].includes(f.command)) return false;
      return includedIn('filtered', text) || includedIn('userunknown', text);
    },
  ],
  ['requireptr', keyword('requireptr')],
  ['notcompliantrfc', keyword('notcompliantrfc')],
  ['badreputation', keyword('badreputation')],
  ['contenterror', keyword('contenterror')],
  [
    'rejected',
    (text, f, sname) => {
      if (sname === 'rejected') return true;
      if (f.command === 'MAIL') return includedIn('rejected', text);
      if (f.command === 'DATA') return sname !== 'userunknown' && includedIn('rejected', text);
      if (!sname || sname === 'undefined' || sname === 'onhold' || sname === 'securityerror' || sname === 'systemerror') return includedIn('rejected', text);
      return false;
    },
  ],
  ['hostunknown', (text, _f, sname) => (sname === 'hostunknown' ? !includedIn('networkerror', text) : includedIn('hostunknown', text))],
  ['spamdetected', keyword('spamdetected')],
  ['speeding', keyword('speeding')],
  ['toomanyconn', keyword('toomanyconn')],
  ['blocked', keyword('blocked')],
];

const SECOND = [
  'mailboxfull', 'authfailure', 'badreputation', 'speeding', 'spamdetected', 'virusdetected', 'policyviolation', 'norelaying',
  'systemerror', 'networkerror', 'suspend', 'contenterror', 'systemfull', 'notaccept', 'expired', 'failedstarttls',
  'securityerror', 'suppressed', 'mailererror',
];

/**
 * "550 : User unknown", the refusal naming no address: a carrier's reception filter (the recipient refuses the sender's
 * domain or address, au/KDDI's ezweb answers so), not a mailbox that does not exist.
 */
const NO_ADDRESS_UNKNOWN = /\b5\d\d:?\s+(?:<>\s*)?:\s*user unknown\b/i;

/** Reasons that say little about the address: the words' meaning (meaning.ts) may say more. */
const WEAK = new Set<Reason>(['onhold', 'undefined', 'rejected', 'systemerror', 'securityerror', 'mailererror']);

/**
 * The reason of one failure: sisimai's reading, then the meaning of the words when that reading says little (a
 * mailbox that does not exist, a domain that does not, an account closed for good, in any of the languages meaning.ts
 * reads). An account suspended or disabled only for a while is a mailbox failure (`onhold`), not a dead address.
 */
export function findReason(f: Failure): Reason {
  const name = sisimaiReason(f);
  // sisimai's `filtered`: "user unknown" answered by a filter, after DATA, or without the RCPT or x.1.1 that would
  // prove it; the address may well live, so it counts as a mailbox failure (suppressed only when it repeats)
  if (name === 'filtered') return 'onhold';
  const reason = fold(name)!;
  // the same from a filtering appliance or a reception filter, without the mailbox server's x.1.x to prove it
  if (reason === 'userunknown' && !/^5\.1\./.test(f.status ?? '') && (f.fromGateway || NO_ADDRESS_UNKNOWN.test(f.diagnostic))) return 'onhold';
  // "sender domain does not exist": a dead reason about our own side is a refusal of the sender
  if (reasonClass(reason) === 'dead' && aboutSender(f.diagnostic)) return 'rejected';
  // an account disabled, deactivated or closed (or 5.7.13, "user account disabled"); frozen, locked or suspended for
  // a while is a mailbox failure
  if (reason === 'suspend') return f.status === '5.7.13' || saysGone(f.diagnostic) ? 'suspend' : 'onhold';
  // after DATA the address was accepted: "user unknown" then is a filter's answer (sisimai's `filtered`), not proof;
  // an answer to MAIL FROM is about the sender
  if (!WEAK.has(reason) || f.command === 'DATA' || f.command === 'MAIL') return reason;
  const meant = meaningOf(f.diagnostic);
  // words of a dead address under the server's own 5.7.x (policy), not in answer to RCPT: the policy is the answer
  if ((meant === 'userunknown' || meant === 'hostunknown') && f.command !== 'RCPT' && f.status?.startsWith('5.7.')) return reason;
  return meant ?? reason;
}

/** The reason of one failure as sisimai reads it (reason/find.go's order, its phrases), by sisimai's name. */
function sisimaiReason(f: Failure): string {
  const known = f.known && fold(f.known) ? f.known : null;
  if (known && !RETRY.has(known)) return known;
  const text = f.diagnostic.toLowerCase().replace(/\s+/g, ' ');
  const sname = statusName(f.status);
  if (sname === 'delivered') return 'undefined';
  for (const [name, probe] of PROBES) if (probe(text, f, sname)) return name;
  if (known) return known;
  for (const name of SECOND) if (includedIn(name, text)) return name;
  // the status alone (5.2.1 is sisimai's `filtered`) proves nothing more: the words may say more (findReason)
  if (sname && fold(sname)) return fold(sname)!;
  const subject = (f.status ?? '').slice(0, 3);
  if (subject === '5.6' || subject === '4.6') return 'contenterror';
  if (subject === '5.7' || subject === '4.7') return 'securityerror';
  if (f.action === 'delayed' || f.action === 'expired') return 'expired';
  if (f.command === 'EHLO' || f.command === 'HELO') return 'blocked';
  return text.trim() ? 'onhold' : 'undefined';
}

/**
 * The enhanced status code of a text (5.1.1), or null: the first one that follows an SMTP reply code (`550-'5.7.1`, `550
 * 5.7.1`: the server's own), else the first one (a reporter's words before the server's answer, Amazon SES's `5.1.0 -
 * Unknown address error 550-'5.7.1 ...'`, give way to it).
 */
export function findStatus(text: string): string | null {
  const m = /\b[245]\d\d[ -]['"]?([245])\.(\d{1,3})\.(\d{1,3})(?![\d.]*\d)/.exec(text) ?? /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.]*\d)/.exec(text);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}

/** The first SMTP reply code in a text (550), or null. */
export function findReplyCode(text: string): string | null {
  const m = /(?:^|[\s:;(\["'=])([245][0-5][0-9])(?=[\s-]|$)(?![-\s]*\d{3}\b)/m.exec(text);
  return m ? m[1]! : null;
}

/** The SMTP command a diagnostic answered, when it says. */
export function findCommand(text: string): string {
  const t = text.toUpperCase();
  const m =
    /\b(?:AFTER|IN REPLY TO|IN RESPONSE TO|RESPONSE TO|FOR|OUR|>>>)\s+(RCPT|MAIL|DATA|HELO|EHLO|END OF DATA)\b/.exec(t) ??
    /\bSMTP:?\s?(?:COMMAND\s+)?(RCPT|MAIL|DATA)\b|\[(RCPT)_TO\]/.exec(t) ??
    /\b(RCPT|DATA|HELO|EHLO) TO\b|\b(RCPT|MAIL) FROM\b|\bEND OF DATA\b/.exec(t);
  if (!m) return '';
  const word = (m[1] ?? m[2] ?? m[0]).replace(/ TO$| FROM$/, '');
  return word === 'END OF DATA' ? 'DATA' : word;
}
