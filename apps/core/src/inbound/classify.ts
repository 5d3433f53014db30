import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { readReport, reasonClass, unknownFormatFailure, type Failed, type Reason, type ReasonClass } from './bounces';
import { messageIdsIn } from './thread-ids';
import { messageOfVerp } from '../delivery/verp';

/**
 * What an inbound email is, from its own content (docs/inbound.md); matching it to our messages and prospects is match.ts's job.
 * `delayed` is a delivery report that does not act (4.x.x, or an Action other than failed): recorded as a bounce, no effect.
 */
export type Recognised = 'bounce' | 'delayed' | 'complaint' | 'auto_reply' | 'message';

/**
 * A delivery or feedback report. For a bounce, `recipient` and the fields beside it are the first permanently failed
 * recipient's (else the first one's); `recipients` lists every one the report names. A report that names nobody has
 * recipient null and reason `undefined`.
 */
export interface InboundReport {
  recipient: string | null;
  originalId: string | null;
  status: string | null;
  diagnostic: string;
  /** bounces: the reason in sisimai's vocabulary, its class, the SMTP reply code; null for a complaint */
  reason: Reason | null;
  reasonClass: ReasonClass | null;
  smtpCode: string | null;
  /** a dead address: suppressed at once */
  dead: boolean;
  recipients: Failed[];
  /** every address the report is about: the failed recipients, or the complainants */
  addresses: string[];
  /** complaints: the feedback type (abuse, opt-out...) */
  feedbackType: string | null;
  /** complaints: the message a VERP Return-Path of the attached original names (its token verified), if any */
  originalVerp?: string | null;
}

export interface InboundMail {
  kind: Recognised;
  from: string;
  subject: string;
  messageId: string | null;
  date: Date;
  /** Message-IDs of In-Reply-To and References */
  threadIds: string[];
  /** for reports: what the report says (docs/inbound.md) */
  report: InboundReport | null;
  /** the message a VERP address it came to names (Delivered-To, X-Original-To or To), if any */
  verp: string | null;
  /** for auto-replies: the return date found in the text (UTC midnight of that day), if any */
  returnDate: Date | null;
  /** what it says (docs/inbound-events.md): the first To address, the text and html bodies, the attachments */
  to: string;
  text: string | null;
  html: string | null;
  attachments: { filename: string; contentType: string; content: Buffer }[];
  /** not valid MIME: kept raw, handed on as a message with what could be read */
  invalid: boolean;
}

const OOO_SUBJECT =
  /\b(out of (the )?office|automatic reply|auto(matic)?[- ]?reply|autoreply|auto[- ]?response|abwesenheitsnotiz|abwesend|absence|absent|r[ée]ponse automatique|fuera de la oficina|respuesta autom[áa]tica|afwezig|automatisch antwoord|risposta automatica|fora do escrit[óo]rio|resposta autom[áa]tica|on vacation|on leave)\b/i;

const firstAddress = (a: AddressObject | AddressObject[] | undefined): string => {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return (list.flatMap((x) => x.value)[0]?.address ?? '').trim().toLowerCase();
};

function header(mail: ParsedMail, name: string): string {
  const v = mail.headers.get(name);
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && 'value' in v) return String((v as { value: unknown }).value);
  return String(v);
}

export function isAutoReply(mail: ParsedMail): boolean {
  const submitted = header(mail, 'auto-submitted').trim().toLowerCase();
  if (submitted && !submitted.startsWith('no')) return true;
  if (mail.headers.has('x-autoreply') || mail.headers.has('x-autorespond')) return true;
  if (header(mail, 'precedence').trim().toLowerCase() === 'auto_reply') return true;
  return OOO_SUBJECT.test(mail.subject ?? '');
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH = '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const DAY_MS = 86_400_000;

/**
 * The first date in `text` after `after` and at most 60 days later: 2026-12-01, 03.12.2026, 12/03/2026 (US order),
 * "December 3", "3 December" (year optional: the next such day). UTC midnight of that day, or null.
 */
export function findReturnDate(text: string, after: Date): Date | null {
  const today = Date.UTC(after.getUTCFullYear(), after.getUTCMonth(), after.getUTCDate());
  const candidates: { at: number; index: number }[] = [];
  const add = (index: number, y: number | null, m: number, d: number) => {
    if (m < 0 || m > 11 || d < 1 || d > 31) return;
    const years = y !== null ? [y < 100 ? 2000 + y : y] : [after.getUTCFullYear(), after.getUTCFullYear() + 1];
    for (const year of years) {
      const at = Date.UTC(year, m, d);
      if (new Date(at).getUTCDate() !== d) continue;
      if (at >= today && at - today <= 60 * DAY_MS) return void candidates.push({ at, index });
    }
  };
  for (const m of text.matchAll(/\b(\d{4})-(\d{2})-(\d{2})\b/g)) add(m.index!, +m[1]!, +m[2]! - 1, +m[3]!);
  for (const m of text.matchAll(/\b(\d{1,2})\.(\d{1,2})\.(\d{2,4})\b/g)) add(m.index!, +m[3]!, +m[2]! - 1, +m[1]!);
  for (const m of text.matchAll(/\b(\d{1,2})\/(\d{1,2})\/(\d{2,4})\b/g)) add(m.index!, +m[3]!, +m[1]! - 1, +m[2]!);
  for (const m of text.matchAll(new RegExp(`\\b${MONTH}\\.?\\s+(\\d{1,2})(?:st|nd|rd|th)?\\b(?:,?\\s+(\\d{4}))?`, 'gi'))) {
    add(m.index!, m[3] ? +m[3] : null, MONTHS.indexOf(m[1]!.slice(0, 3).toLowerCase()), +m[2]!);
  }
  for (const m of text.matchAll(new RegExp(`\\b(\\d{1,2})(?:st|nd|rd|th)?\\.?\\s+(?:of\\s+)?${MONTH}\\b(?:,?\\s+(\\d{4}))?`, 'gi'))) {
    add(m.index!, m[3] ? +m[3] : null, MONTHS.indexOf(m[2]!.slice(0, 3).toLowerCase()), +m[1]!);
  }
  candidates.sort((a, b) => a.index - b.index);
  return candidates[0] ? new Date(candidates[0].at) : null;
}

/** Parses and recognises one raw email; one that is not valid MIME is a message marked `invalid`, never an error. */
export async function classify(raw: Buffer | string, now = new Date()): Promise<InboundMail> {
  let mail: ParsedMail;
  try {
    mail = await simpleParser(raw, { skipHtmlToText: false, skipTextLinks: true });
  } catch {
    return invalidMail(raw, now);
  }
  if (!looksLikeMime(mail)) return invalidMail(raw, now);
  try {
    return await recognise(raw, mail, now);
  } catch {
    return invalidMail(raw, now);
  }
}

/** Text as Postgres stores it: a NUL cannot be kept in a text column (U+FFFD in its place). */
const storable = (value: string | null | undefined): string | null => (value === null || value === undefined ? null : value.replace(/\u0000/g, '\ufffd'));

/** A header section with a From or a Message-ID or a Date: what every email has, and a stray blob of bytes has not. */
function looksLikeMime(mail: ParsedMail): boolean {
  return mail.headers.has('from') || mail.headers.has('message-id') || mail.headers.has('date');
}

/** An email that is not valid MIME: a message from nobody known, its bytes shown as text (and kept raw by handle.ts). */
function invalidMail(raw: Buffer | string, now: Date): InboundMail {
  const text = storable((Buffer.isBuffer(raw) ? raw : Buffer.from(raw)).toString('utf8').slice(0, 100_000));
  return { kind: 'message', from: '', subject: '', messageId: null, date: now, threadIds: [], report: null, verp: null, returnDate: null, to: '', text, html: null, attachments: [], invalid: true };
}

async function recognise(raw: Buffer | string, mail: ParsedMail, now: Date): Promise<InboundMail> {
  const date = mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : now;
  const base = {
    to: storable(firstAddress(mail.to))!,
    text: storable(mail.text),
    html: storable(typeof mail.html === 'string' ? mail.html : null),
    attachments: (mail.attachments ?? []).map((a) => ({ filename: storable(a.filename) ?? '', contentType: storable(a.contentType) || 'application/octet-stream', content: a.content })),
    invalid: false,
    from: storable(firstAddress(mail.from))!,
    subject: storable(mail.subject) ?? '',
    messageId: mail.messageId ?? null,
    date,
    threadIds: [...messageIdsIn(mail.inReplyTo), ...messageIdsIn(mail.references)],
    report: null,
    returnDate: null,
    verp: verpOf(mail),
  };
  // a delivery or feedback report is never an auto-reply, whatever its Auto-Submitted or subject says
  const report = readReport(raw);
  if (report?.kind === 'complaint') {
    const base2 = { recipient: report.addresses[0] ?? null, originalId: report.originalId, status: null, diagnostic: '', reason: null, reasonClass: null, smtpCode: null, dead: false, recipients: [], addresses: report.addresses };
    const originalVerp = report.originalReturnPath ? messageOfVerp(report.originalReturnPath) : null;
    return { ...base, kind: 'complaint', report: { ...base2, feedbackType: report.feedbackType, originalVerp } };
  }
  if (report?.kind === 'bounce') {
    const first = report.recipients.find((r) => r.permanent) ?? report.recipients[0];
    const permanent = !first || first.permanent;
    return {
      ...base,
      kind: permanent ? 'bounce' : 'delayed',
      report: {
        recipient: first?.address ?? null,
        originalId: report.originalId,
        status: first?.status ?? null,
        diagnostic: first?.diagnostic ?? '',
        reason: first?.reason ?? 'undefined',
        reasonClass: reasonClass(first?.reason ?? 'undefined'),
        smtpCode: first?.smtpCode ?? null,
        dead: first?.dead ?? false,
        recipients: report.recipients,
        addresses: report.recipients.map((r) => r.address),
        feedbackType: null,
      },
    };
  }
  if (isAutoReply(mail)) {
    // an auto-reply stays one even at a VERP address (RFC 3834 answers the envelope sender)
    const text = `${mail.subject ?? ''}\n${mail.text ?? ''}`;
    return { ...base, kind: 'auto_reply', returnDate: findReturnDate(text, date) };
  }
  if (base.verp) {
    // mail that came back to a VERP address is a report about that message, whatever its format
    const failed = unknownFormatFailure(raw);
    const report: InboundReport = {
      recipient: null, originalId: null, status: failed.status, diagnostic: failed.diagnostic, reason: failed.reason,
      reasonClass: reasonClass(failed.reason), smtpCode: failed.smtpCode, dead: failed.dead, recipients: [failed], addresses: [], feedbackType: null,
    };
    return { ...base, kind: failed.permanent ? 'bounce' : 'delayed', report };
  }
  return { ...base, kind: 'message' };
}

/** The first VERP address of ours among the addresses the email was delivered to. */
function verpOf(mail: ParsedMail): string | null {
  const values = ['delivered-to', 'x-original-to', 'to', 'envelope-to', 'x-envelope-to'].flatMap((name) => {
    const v = mail.headers.get(name) as unknown;
    if (!v) return [];
    if (typeof v === 'string') return [v];
    if (Array.isArray(v)) return v.map(String);
    if (typeof v === 'object' && 'text' in (v as object)) return [String((v as { text: unknown }).text)];
    return [String(v)];
  });
  for (const line of mail.headerLines ?? []) if (/^(delivered-to|x-original-to)\s*:/i.test(line.line)) values.push(line.line);
  for (const value of values) {
    const id = messageOfVerp(value);
    if (id) return id;
  }
  return null;
}
