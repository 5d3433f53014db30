import type { Complaint } from './arf';
import type { Found, Mail } from '../report';

/**
 * Amazon SES notifications forwarded by SNS to an email address: a JSON document in the body, notificationType Bounce,
 * Complaint or Delivery.
 */
interface Notification {
  notificationType?: string;
  eventType?: string;
  bounce?: { bounceType?: string; bouncedRecipients?: { emailAddress?: string; action?: string; status?: string; diagnosticCode?: string }[] };
  complaint?: { complainedRecipients?: { emailAddress?: string }[]; complaintFeedbackType?: string };
}

function notificationOf(mail: Mail): Notification | null {
  const at = mail.text.indexOf('{"notificationType"') >= 0 ? mail.text.indexOf('{"notificationType"') : mail.text.indexOf('{"eventType"');
  if (at < 0) return null;
  const text = mail.text.slice(at).replace(/=\r?\n/g, '');
  // the JSON ends where its braces balance
  let depth = 0;
  let end = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      end = i + 1;
      break;
    }
  }
  try {
    return JSON.parse(text.slice(0, end < 0 ? undefined : end)) as Notification;
  } catch {
    // cut by a line-length limit: the parts we need, read by pattern
    const type = /"(?:notificationType|eventType)"\s*:\s*"(\w+)"/.exec(text)?.[1];
    const value = (item: string, key: string) => new RegExp(`"${key}"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(item)?.[1];
    const list = (name: string) =>
      [...(new RegExp(`"${name}"\\s*:\\s*\\[([^\\]]*)\\]`).exec(text)?.[1] ?? '').matchAll(/\{[^{}]*\}/g)].map(([item]) => ({
        emailAddress: value(item, 'emailAddress'),
        status: value(item, 'status'),
        action: value(item, 'action'),
        diagnosticCode: value(item, 'diagnosticCode'),
      }));
    if (!type) return null;
    return { notificationType: type, bounce: { bounceType: /"bounceType"\s*:\s*"(\w+)"/.exec(text)?.[1], bouncedRecipients: list('bouncedRecipients') }, complaint: { complainedRecipients: list('complainedRecipients') } };
  }
}

export type SesResult = { kind: 'bounce'; found: Found[] } | { kind: 'complaint'; complaint: Complaint } | { kind: 'delivery' };

/** The original's Message-ID header, when the notification carries the original's headers (`mail.headers`). */
export function sesOriginalId(mail: Mail): string | null {
  const text = mail.text.replace(/=\r?\n/g, '');
  return /\{\s*"name"\s*:\s*"message-id"\s*,\s*"value"\s*:\s*"(<[^"<>\s]+>)"/i.exec(text)?.[1] ?? null;
}

export function readAmazonSes(mail: Mail): SesResult | null {
  const n = notificationOf(mail);
  if (!n) return null;
  const type = (n.notificationType ?? n.eventType ?? '').toLowerCase();
  if (type === 'bounce') {
    const transient = (n.bounce?.bounceType ?? '').toLowerCase() === 'transient';
    const found = (n.bounce?.bouncedRecipients ?? [])
      .filter((r) => r.emailAddress)
      .map((r) => ({
        address: r.emailAddress!,
        diagnostic: (r.diagnosticCode ?? '').replace(/^\s*smtp;\s*/i, ''),
        status: r.status ?? null,
        action: transient ? 'delayed' : (r.action ?? 'failed'),
      }));
    return { kind: 'bounce', found };
  }
  if (type === 'complaint') {
    const addresses = (n.complaint?.complainedRecipients ?? []).map((r) => (r.emailAddress ?? '').toLowerCase()).filter(Boolean);
    return { kind: 'complaint', complaint: { addresses, feedbackType: n.complaint?.complaintFeedbackType ?? 'abuse' } };
  }
  return { kind: 'delivery' };
}
