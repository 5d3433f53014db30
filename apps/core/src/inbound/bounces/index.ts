import { filteringGateway } from './gateways';
import { header } from './mime';
import { readAmazonSes, sesOriginalId } from './families/amazonses';
import { readArf } from './families/arf';
import { readRfc3464 } from './families/rfc3464';
import { readText } from './families/text';
import { finish, firstAddress, isRobot, mailOf, type Failed, type Found, type Mail } from './report';

export { reasonClass, REASONS, type Reason, type ReasonClass } from './reasons';
export type { Failed } from './report';

/**
 * The bounce reader (docs/inbound.md): what a delivery or feedback report says, per failed recipient, in the formats real
 * servers write. Pure and synchronous. null: the message is not a report.
 */
export type Report =
  | { kind: 'bounce'; format: 'rfc3464' | 'text' | 'amazonses'; recipients: Failed[]; originalId: string | null }
  | { kind: 'complaint'; format: 'arf' | 'amazonses'; addresses: string[]; feedbackType: string; originalId: string | null; originalReturnPath: string | null };

const SUBJECT =
  /undeliver|undelivered|delivery (status|failure|failed|notification|report|problem|has failed)|failure notice|returned mail|mail delivery (failed|failure|system|subsystem)|could not be delivered|not (be )?delivered|non[- ]?remis|nondeliver|non-deliver|returned to sender|unzustellbar|nicht zustellbar|fehlgeschlagen|mail failure|message failure|delivery error|bounced?|rejected|permanent error|mail system error|warning: could not send|error sending|failed mail|unable to deliver|delivery notification|ndr|unbekannt|message blocked|не доставлено|未達|エラー|配信/i;
const DISPLAY = /mail delivery|delivery (subsystem|system|notification|status)|mailer|postmaster|mail ?administrator|mail ?system|internet mail delivery|message ?delivery|bounce|daemon/i;
const BODY =
  /could not be delivered|couldn't be delivered|delivery (to the following|has failed|failed)|permanent (error|failure|fatal)|undeliverable|unable to deliver|wasn't able to deliver|returned to you|message was not delivered|fatal errors?|following (address|recipient)s? (failed|had)|this is the (qmail-send|mail system|mail delivery)|mail delivery software|remote host said|delivery attempts? (will continue|failed)|user unknown|not delivered|no such user|unknown user|invalid (user|recipient|address)|server message|did not reach|not a member|error message below|recipient address rejected|delivery failed|failed to deliver|mailbox (is )?(full|unavailable)|does not exist/i;

function looksLikeBounce(mail: Mail): boolean {
  if (header(mail.headers, 'x-failed-recipients')) return true;
  const from = header(mail.headers, 'from');
  const robot = isRobot(firstAddress(from) ?? '') || DISPLAY.test(from.replace(/<[^>]*>/, ''));
  const subject = SUBJECT.test(mail.subject);
  const body = BODY.test(mail.errors);
  return (robot && (subject || body)) || (subject && body);
}

function originalIdOf(mail: Mail): string | null {
  const id = mail.original ? header(mail.original, 'message-id') : '';
  return /<[^<>\s]+>/.exec(id)?.[0] ?? null;
}

/** The attached original's Return-Path (a VERP address of ours names the message), or null. */
const originalReturnPathOf = (mail: Mail): string | null => (mail.original ? header(mail.original, 'return-path') || null : null);

export function readReport(raw: string | Buffer): Report | null {
  const mail = mailOf(typeof raw === 'string' ? raw : raw.toString('latin1'));
  const ct = header(mail.headers, 'content-type').toLowerCase();
  const originalId = originalIdOf(mail);
  const originalReturnPath = originalReturnPathOf(mail);
  const complaint = readArf(mail);
  if (complaint) return { kind: 'complaint', format: 'arf', addresses: complaint.addresses, feedbackType: complaint.feedbackType, originalId, originalReturnPath };
  const ses = readAmazonSes(mail);
  const sesId = ses ? (originalId ?? sesOriginalId(mail)) : null;
  if (ses?.kind === 'complaint') return { kind: 'complaint', format: 'amazonses', ...ses.complaint, originalId: sesId, originalReturnPath };
  if (ses?.kind === 'bounce') return { kind: 'bounce', format: 'amazonses', recipients: ses.found.map((f) => finish(f)), originalId: sesId };
  if (ses) return null; // a delivery notice
  const fromGateway = filteringGateway(mail.headers) !== null;
  const finished = (found: Found[]) => found.map((f) => finish(f, fromGateway));
  const isDsn = /report-type\s*=\s*"?(delivery-status|global-delivery-status)/.test(ct) || !!mail.dsn;
  if (isDsn) {
    const found = readRfc3464(mail) ?? readText(mail) ?? [];
    return { kind: 'bounce', format: 'rfc3464', recipients: finished(found), originalId };
  }
  if (!looksLikeBounce(mail)) return null;
  const found = readText(mail) ?? [];
  return { kind: 'bounce', format: 'text', recipients: finished(found), originalId };
}

/**
 * A report of a format we do not read, known to be one because it came back to a VERP address: the whole text is its
 * diagnostic; its reason is what the text gives, else undefined.
 */
export function unknownFormatFailure(raw: string | Buffer): Failed {
  const mail = mailOf(typeof raw === 'string' ? raw : raw.toString('latin1'));
  const failed = finish({ address: '', diagnostic: mail.errors || mail.text });
  return failed.reason === 'onhold' ? { ...failed, reason: 'undefined', dead: false } : failed;
}
