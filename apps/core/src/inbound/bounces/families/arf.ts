import { header, walk } from '../mime';
import { addressesIn, firstAddress, type Mail } from '../report';

/**
 * RFC 5965 feedback reports (ARF: Yahoo, AOL, Outlook.com, Return Path FBL...), the abuse reports that carry
 * Feedback-Type in their text, and Apple Mail's one-click unsubscribe (an opt-out).
 */
export interface Complaint {
  /** the complaining recipients: Original-Rcpt-To / Removal-Recipient, else the original's To */
  addresses: string[];
  feedbackType: string;
}

export function readArf(mail: Mail): Complaint | null {
  const ct = header(mail.headers, 'content-type').toLowerCase();
  if (/apple mail sent this email to unsubscribe/i.test(mail.text)) return { addresses: mail.from ? [mail.from] : [], feedbackType: 'opt-out' };
  const report = walk(mail.root).find((p) => p.type === 'message/feedback-report');
  const fields = report?.body ?? (/^feedback-type\s*:/im.test(mail.text) ? mail.text : '');
  if (!fields && !/report-type\s*=\s*"?feedback-report/.test(ct)) return null;
  const values = (name: string) => [...fields.matchAll(new RegExp(`^${name}[ \\t]*:[ \\t]*(.*)$`, 'gim'))].map((m) => m[1]!.trim());
  let addresses = [...values('Original-Rcpt-To'), ...values('Removal-Recipient')].map((v) => firstAddress(v)).filter((a): a is string => !!a);
  if (!addresses.length && mail.original) addresses = addressesIn(header(mail.original, 'to'));
  return { addresses: [...new Set(addresses)], feedbackType: (values('Feedback-Type')[0] ?? '').toLowerCase() || 'abuse' };
}
