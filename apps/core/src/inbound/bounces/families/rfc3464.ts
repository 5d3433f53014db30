import { findCommand } from '../reasons';
import { readText } from './text';
import { firstAddress, isRobot, squeeze, type Found, type Mail } from '../report';

/**
 * RFC 3464 delivery status notifications (Postfix, Sendmail, Exchange, Office 365, Amazon SES, PowerMTA, Domino, most
 * big providers): one block of fields per recipient in a message/delivery-status part, or in the body where a server
 * writes them there.
 */
const FIELD = /^([A-Za-z-]+)[ \t]*:[ \t]*(.*)$/;

function fieldsOf(block: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const m = FIELD.exec(line);
    if (m && !out.has(m[1]!.toLowerCase())) out.set(m[1]!.toLowerCase(), m[2]!.trim());
  }
  return out;
}

const typed = (value: string | undefined) => (value ?? '').replace(/^\s*[\w-]+\s*;\s*/, '').trim();

/** The paragraph of the human-readable text that names `address`, for a DSN without a Diagnostic-Code. */
function paragraphAbout(text: string, address: string): string {
  const at = text.toLowerCase().indexOf(address);
  if (at < 0) return '';
  const start = text.lastIndexOf('\n\n', at);
  let end = text.indexOf('\n\n', at + address.length);
  if (end >= 0 && end - at < 40) end = text.indexOf('\n\n', end + 2);
  return text.slice(start < 0 ? 0 : start, end < 0 ? undefined : end);
}

export function readRfc3464(mail: Mail): Found[] | null {
  let texts: Found[] | null | undefined;
  const source = mail.dsn || (/^(Final|Original)-Recipient\s*:/im.test(mail.text) ? mail.text : '');
  if (!source) return null;
  const found: Found[] = [];
  const blocks = source.replace(/\r\n/g, '\n').split(/\n[ \t]*\n/);
  for (const block of blocks) {
    const f = fieldsOf(block);
    const final = typed(f.get('final-recipient'));
    const originalRcpt = typed(f.get('original-recipient'));
    const address = firstAddress(final) ?? firstAddress(typed(f.get('x-actual-recipient'))) ?? firstAddress(originalRcpt);
    if (!address) continue;
    const code = typed(f.get('diagnostic-code'));
    const status = /\d\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0] ?? null;
    texts ??= readText(mail);
    const human = texts?.find((t) => t.address === address)?.diagnostic ?? paragraphAbout(mail.errors, address);
    const diagnostic = code && code.length > 8 ? code : `${code} ${squeeze(human) || squeeze(mail.errors)}`;
    found.push({ address, diagnostic, status, action: f.get('action') ?? '', command: findCommand(`${code}\n${human || mail.errors}`) });
  }
  // a block without recipient fields but with Status / Diagnostic-Code carries the answer for the recipients named in the text
  if (!found.length) {
    const f = fieldsOf(source);
    const address = firstAddress(typed(f.get('final-recipient')) || typed(f.get('original-recipient')));
    if (address && !isRobot(address)) found.push({ address, diagnostic: typed(f.get('diagnostic-code')) || mail.errors, action: f.get('action') ?? '' });
  }
  return found.length ? found : null;
}
