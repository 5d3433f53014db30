import { header, htmlText, parse, walk, type Headers, type Part } from './mime';
import { findCommand, findReason, findReplyCode, findStatus, reasonClass, type Reason } from './reasons';

/** One failed recipient of a report (docs/inbound.md). */
export interface Failed {
  address: string;
  /** enhanced status, 5.1.1 */
  status: string | null;
  /** SMTP reply code, 550 */
  smtpCode: string | null;
  diagnostic: string;
  reason: Reason;
  /** a dead address: userunknown, hostunknown, hasmoved, notaccept, and the failure is permanent */
  dead: boolean;
  /** a final failure (5.x.x, or a report that gave up); false for 4.x.x and Action delayed */
  permanent: boolean;
}

/** What a family's reader hands back for one recipient; the reason and the rest are worked out from it. */
export interface Found {
  address: string;
  diagnostic: string;
  status?: string | null;
  smtpCode?: string | null;
  action?: string;
  command?: string;
  /** a reason the format itself says */
  reason?: string;
}

/** The message as the family readers see it. */
export interface Mail {
  headers: Headers;
  root: Part;
  from: string;
  to: string;
  subject: string;
  /** the text of the human-readable parts, the attached original left out */
  text: string;
  /** the part of `text` before the copy of the original message */
  errors: string;
  /** machine parts: message/delivery-status and the like, raw */
  dsn: string;
  /** the attached original message's headers, if any */
  original: Headers | null;
  /** addresses that are the sender side, never a failed recipient */
  senders: Set<string>;
}

export const ADDRESS = /[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+/g;

export function addressesIn(text: string): string[] {
  return [...text.matchAll(ADDRESS)].map((m) => clean(m[0]));
}
export const clean = (a: string) => a.toLowerCase().replace(/^["'<(]+|[>"').,;:]+$/g, '');
export const firstAddress = (text: string): string | null => addressesIn(text)[0] ?? null;

const ROBOT = /^(|mailer-daemon|post_master|[\w.-]+-admin|mailer_daemon|mailerdaemon|postmaster|mail-daemon|maildaemon|mdaemon|root|noreply|no-reply|bounce[s]?|daemon|mail|mailadmin|nobody)$/i;
const DAEMON = /^(mailer-daemon|mailer_daemon|mailerdaemon|mail-daemon|maildaemon|mdaemon)$/i;
/** an address that sends reports (used to tell a report) */
export const isRobot = (address: string) => ROBOT.test(address.split('@')[0] ?? '');
/** an address that is never a failed recipient */
export const isDaemon = (address: string) => DAEMON.test(address.split('@')[0] ?? '');

const MACHINE = new Set(['message/delivery-status', 'message/global-delivery-status', 'message/feedback-report', 'message/disposition-notification']);
const ORIGINAL = new Set(['message/rfc822', 'message/global', 'text/rfc822-headers', 'message/rfc822-headers', 'message/global-headers', 'text/rfc822']);

/** Lines that start the copy of the original message in a plain-text report. */
export const ORIGINAL_MARK =
  /^[ \t>|*=_-]*(?:-{2,}|={2,}|_{3,})?[ \t]*(?:this is a copy of the message|below this line is a copy of the message|original message( follows| header[s]?)?|-+ ?original message|unsent message( below| follows)?|returned message|the original message( headers| follows)|original headers|message (header|headers|text|body) follows?|copy of the original message|undelivered message( headers)?|header of (the )?original message|the headers of the original message|included is a copy|a copy of the original|message (that|which) failed|rfc822 headers|original mail|returned mail follows|mail headers|your message reads)\b.*$/im;

function textOf(root: Part): string {
  const texts: string[] = [];
  const htmls: string[] = [];
  const visit = (p: Part, inOriginal: boolean) => {
    if (ORIGINAL.has(p.type)) return void (inOriginal = true);
    if (p.parts.length) return p.parts.forEach((c) => visit(c, inOriginal));
    if (MACHINE.has(p.type)) return;
    if (p.type === 'text/html') htmls.push(htmlText(p.body));
    else if (p.type.startsWith('text/') || p.type.startsWith('multipart/')) texts.push(p.body);
  };
  visit(root, false);
  return (texts.length ? texts : htmls).join('\n');
}

function originalOf(root: Part): Headers | null {
  for (const p of walk(root)) {
    if (p.type === 'message/rfc822' || p.type === 'message/global') return p.parts[0]?.headers ?? null;
    if (ORIGINAL.has(p.type)) return parse(p.body).headers;
  }
  return null;
}

export function mailOf(raw: string): Mail {
  const root = parse(raw);
  const text = textOf(root).replace(/\r\n/g, '\n');
  const mark = ORIGINAL_MARK.exec(text);
  const headersAt = mark ? -1 : text.search(/\n\s*\n(?:Received|Return-Path|DKIM-Signature|X-[\w-]+|Message-I[dD]|MIME-Version)[ \t]*:[ \t]*\S/);
  let errors = mark ? text.slice(0, mark.index) : headersAt > 0 ? text.slice(0, headersAt) : text;
  if (errors.trim().length < 20) errors = text;
  const dsn = walk(root)
    .filter((p) => MACHINE.has(p.type))
    .map((p) => p.body)
    .join('\n');
  let original = originalOf(root);
  if (!original && mark) {
    // a copy of the original written inline after the mark
    const rest = text.slice(mark.index + mark[0].length).replace(/^\s*\n/, '');
    const headers = parse(rest).headers;
    if (headers.has('from') || headers.has('message-id') || headers.has('to')) original = headers;
  }
  const headers = root.headers;
  const senders = new Set<string>();
  for (const a of addressesIn([header(headers, 'to'), ...(original ? [header(original, 'from'), header(original, 'return-path'), header(original, 'sender')] : [])].join(' '))) senders.add(a);
  return {
    headers,
    root,
    from: firstAddress(header(headers, 'from')) ?? '',
    to: firstAddress(header(headers, 'to')) ?? '',
    subject: header(headers, 'subject'),
    text,
    errors,
    dsn,
    original,
    senders,
  };
}

/** Whitespace collapsed, at most 1000 characters. */
export const squeeze = (s: string) => s.replace(/\s+/g, ' ').trim().slice(0, 1000);

/** The final answer for one recipient; `fromGateway`: the report was written by a filtering appliance (gateways.ts). */
export function finish(f: Found, fromGateway = false): Failed {
  const diagnostic = squeeze(f.diagnostic);
  const said = findStatus(diagnostic);
  // the report's Status gives way to the server's own code of the same class (a generic 5.0.0, or a 5.1.1 the
  // reporting MTA wrote over a "552 5.2.2 Over quota")
  const status = f.status && !(said && said[0] === f.status[0] && said !== f.status) ? f.status : (said ?? f.status ?? null);
  const smtpCode = f.smtpCode ?? findReplyCode(diagnostic);
  const action = (f.action ?? '').toLowerCase();
  const reason = findReason({ diagnostic, status, command: f.command ?? findCommand(diagnostic), action, known: f.reason, fromGateway });
  const temporary = action === 'delayed' || (status ? status.startsWith('4') : smtpCode ? smtpCode.startsWith('4') : false);
  const permanent = !temporary && action !== 'delivered' && action !== 'relayed' && action !== 'expanded' && !(status ?? '').startsWith('2');
  return { address: f.address.toLowerCase(), status, smtpCode, diagnostic, reason, permanent, dead: permanent && reasonClass(reason) === 'dead' };
}
