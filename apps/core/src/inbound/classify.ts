import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';

/**
 * What an inbound email is, from its own content (docs/inbound.md); matching it to our messages and prospects is match.ts's job.
 * `delayed` is a delivery report that does not act (4.x.x, or an Action other than failed): recorded as a bounce, no effect.
 */
export type Recognised = 'bounce' | 'delayed' | 'complaint' | 'auto_reply' | 'message';

export interface InboundMail {
  kind: Recognised;
  from: string;
  subject: string;
  messageId: string | null;
  date: Date;
  /** Message-IDs of In-Reply-To and References */
  threadIds: string[];
  /** for reports: the reported recipient, the original message's Message-ID, the status and diagnostic */
  report: { recipient: string | null; originalId: string | null; status: string | null; diagnostic: string } | null;
  /** for auto-replies: the return date found in the text (UTC midnight of that day), if any */
  returnDate: Date | null;
}

const OOO_SUBJECT =
  /\b(out of (the )?office|automatic reply|auto(matic)?[- ]?reply|autoreply|auto[- ]?response|abwesenheitsnotiz|abwesend|absence|absent|r[ée]ponse automatique|fuera de la oficina|respuesta autom[áa]tica|afwezig|automatisch antwoord|risposta automatica|fora do escrit[óo]rio|resposta autom[áa]tica|on vacation|on leave)\b/i;

const ids = (value: unknown): string[] => {
  const all = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  return all.flatMap((v) => String(v).match(/<[^<>\s]+>/g) ?? []);
};

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

/** The text of the report's machine parts (message/delivery-status, message/feedback-report, the attached original). */
function reportParts(mail: ParsedMail): { fields: string; original: string } {
  let fields = '';
  let original = '';
  for (const a of mail.attachments) {
    const type = a.contentType.toLowerCase();
    const text = a.content.toString('utf8');
    if (type === 'message/delivery-status' || type === 'message/feedback-report' || type === 'message/global-delivery-status') fields += `\n${text}`;
    else if (type === 'message/rfc822' || type === 'text/rfc822-headers' || type === 'message/rfc822-headers' || type === 'message/global') original += `\n${text}`;
  }
  // mailparser hands message/delivery-status (and sometimes the headers part) to the body text: read it there then
  if (!fields) fields = mail.text ?? '';
  if (!original) original = mail.text ?? '';
  return { fields, original };
}

const field = (text: string, name: string): string | null => {
  const m = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t]+.*)*)`, 'im').exec(text);
  return m ? m[1]!.replace(/\r?\n[ \t]+/g, ' ').trim() : null;
};
const addressOf = (value: string | null): string | null => {
  if (!value) return null;
  const m = /([^\s;<>"]+@[^\s;<>"]+)/.exec(value);
  return m ? m[1]!.toLowerCase() : null;
};

function readReport(mail: ParsedMail) {
  const { fields, original } = reportParts(mail);
  const recipient = addressOf(field(fields, 'Final-Recipient')) ?? addressOf(field(fields, 'Original-Rcpt-To')) ?? addressOf(field(fields, 'Original-Recipient'));
  const originalId = ids(field(original, 'Message-ID') ?? '')[0] ?? null;
  const originalTo = addressOf(field(original, 'To'));
  return {
    recipient: recipient ?? originalTo,
    originalId,
    status: field(fields, 'Status'),
    action: (field(fields, 'Action') ?? '').toLowerCase(),
    diagnostic: field(fields, 'Diagnostic-Code') ?? field(fields, 'Status') ?? '',
  };
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

/** Parses and recognises one raw email. */
export async function classify(raw: Buffer | string, now = new Date()): Promise<InboundMail> {
  const mail = await simpleParser(raw, { skipHtmlToText: false, skipTextLinks: true });
  const ct = mail.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  const type = (ct?.value ?? '').toLowerCase();
  const reportType = (ct?.params?.['report-type'] ?? '').toLowerCase();
  const date = mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : now;
  const base = {
    from: firstAddress(mail.from),
    subject: mail.subject ?? '',
    messageId: mail.messageId ?? null,
    date,
    threadIds: [...ids(mail.inReplyTo), ...ids(mail.references)],
    report: null,
    returnDate: null,
  };
  if (type === 'multipart/report' && (reportType === 'delivery-status' || reportType === 'feedback-report')) {
    const r = readReport(mail);
    const report = { recipient: r.recipient, originalId: r.originalId, status: r.status, diagnostic: r.diagnostic };
    if (reportType === 'feedback-report') return { ...base, kind: 'complaint', report };
    const permanent = r.action === 'failed' && /^5\.\d{1,3}\.\d{1,3}/.test(r.status ?? '');
    return { ...base, kind: permanent ? 'bounce' : 'delayed', report };
  }
  if (isAutoReply(mail)) {
    const text = `${mail.subject ?? ''}\n${mail.text ?? ''}`;
    return { ...base, kind: 'auto_reply', returnDate: findReturnDate(text, date) };
  }
  return { ...base, kind: 'message' };
}
