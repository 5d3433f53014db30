import { header, walk } from '../mime';
import { addressesIn, firstAddress, type Mail } from '../report';

/** RFC 5965 feedback reports (ARF), and the abuse reports that carry Feedback-Type in their text. */
export interface Complaint {
  address: string | null;
  feedbackType: string;
}

export function readArf(mail: Mail): Complaint | null {
  const ct = header(mail.headers, 'content-type').toLowerCase();
  const report = walk(mail.root).find((p) => p.type === 'message/feedback-report');
  const fields = report?.body ?? (/^feedback-type\s*:/im.test(mail.text) ? mail.text : '');
  if (!fields && !/report-type\s*=\s*"?feedback-report/.test(ct)) return null;
  const field = (name: string) => new RegExp(`^${name}[ \\t]*:[ \\t]*(.*)$`, 'im').exec(fields)?.[1]?.trim() ?? '';
  const originalTo = mail.original ? addressesIn(header(mail.original, 'to'))[0] ?? null : null;
  const address =
    firstAddress(field('Original-Rcpt-To')) ??
    firstAddress(field('Removal-Recipient')) ??
    originalTo ??
    firstAddress(field('Original-Mail-From'));
  return { address, feedbackType: field('Feedback-Type').toLowerCase() || 'abuse' };
}
