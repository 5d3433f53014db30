import { header } from '../mime';
import { findCommand } from '../reasons';
import { addressesIn, clean, isDaemon, type Found, type Mail } from '../report';

/**
 * Plain-text reports: Exim, qmail, old Sendmail, Courier, OpenSMTPD, Gmail, Yahoo, Mail.ru, GMX, Exchange 2003,
 * Lotus Notes, IMail, mFILTER and the like. They name each failed address on a line of its own (or as `<address>:`)
 * with the server's answer under it; the reader takes each such address and the text up to the next one.
 */

/** A line that is an address (optionally <...>, quoted, or followed by `:` and the answer). */
const ADDRESS_LINE = /^[ \t>*-]*(?:[245]\d\d[ -](?:[245]\.\d{1,3}\.\d{1,3}[ \t]+)?)?(?:(?:recipient|address|to|user|rcpt(?: to)?|destinataire|addressee|unknown user|failed address(?:es)?|invalid address(?:es)?|final-recipient|original-recipient)[ \t]*:[ \t]*(?:rfc822;[ \t]*)?)?["<(]?([A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?![A-Za-z0-9-])[>")]?(?:[ \t]*[:.]+(?=\s|$)|[ \t]*\(.*\)|[ \t]*$|[ \t]*(?:<[^>]*>)?[ \t]*:|[ \t]+on[ \t]+\w{3},?[ \t]|[ \t]*\.{3}[ \t]|[ \t]*[-:][ \t]+)/gim;

function candidates(mail: Mail, text: string): { address: string; at: number; end: number }[] {
  const out: { address: string; at: number; end: number }[] = [];
  for (const m of text.matchAll(ADDRESS_LINE)) {
    const address = clean(m[1]!);
    if (mail.senders.has(address) || isDaemon(address)) continue;
    out.push({ address, at: m.index!, end: m.index! + m[0].length });
  }
  return out;
}

/**
 * The text about one address: its line, and when the line says nothing more than the address, the lines under it up to
 * the next address; when it does say more (`addr: 550 ...`, `554 <addr>... Host unknown`), only its continuation lines.
 */
function ownText(text: string, line: { at: number; end: number }, limit: number): string {
  const lineEnd = text.indexOf('\n', line.end);
  const stop = lineEnd < 0 || lineEnd > limit ? limit : lineEnd;
  const rest = text.slice(line.end, stop);
  if (rest.replace(/[^A-Za-z]/g, '').length < 8) {
    const below = text.slice(line.at, limit);
    // an address in a list of details: the answer is elsewhere in the text
    return /(?:^|\n)[ \t]*[245]\d\d[ -]|said:?[ \t]*[245]\d\d|\b[245]\.\d{1,3}\.\d{1,3}\b/.test(below) ? below : `${below}\n${text}`;
  }
  let end = stop;
  for (const l of text.slice(stop, limit).split('\n').slice(1)) {
    if (!/^[ \t]+\S/.test(l) && !/^\(/.test(l)) break;
    end += l.length + 1;
  }
  return text.slice(line.at, Math.min(end, limit));
}

export function readText(mail: Mail): Found[] | null {
  const text = mail.errors;
  const failedHeader = addressesIn(header(mail.headers, 'x-failed-recipients')).filter((a) => !isDaemon(a));
  let lines = candidates(mail, text);
  if (failedHeader.length) {
    const named = lines.filter((l) => failedHeader.includes(l.address));
    lines = named.length ? named : [];
  }
  const found: Found[] = [];
  const seen = new Set<string>();
  lines.forEach((line, i) => {
    const next = lines.slice(i + 1).find((l) => l.address !== line.address);
    const own = ownText(text, line, next?.at ?? text.length);
    // the SMTP command the answer was to, said in its text or in the lines that lead to it ("did not like our RCPT TO:")
    const command = findCommand(`${own}\n${text.slice(lines[i - 1]?.end ?? 0, line.at)}`) || undefined;
    if (seen.has(line.address)) {
      // the same address again: its text joins the first one's
      const first = found.find((f) => f.address === line.address)!;
      first.diagnostic += `\n${own}`;
      first.command ??= command;
      return;
    }
    seen.add(line.address);
    found.push({ address: line.address, diagnostic: own, command });
  });
  for (const a of failedHeader) if (!seen.has(a)) found.push({ address: a, diagnostic: text }), seen.add(a);
  if (found.length) {
    // an answer too short to say anything: the whole text speaks for the address
    for (const f of found) if (f.diagnostic.replace(/\s+/g, ' ').trim().length < 24 + f.address.length) f.diagnostic = text;
    return found;
  }
  // any address in the text that is not the sender's
  const loose = [...new Set(addressesIn(text))].filter((a) => !mail.senders.has(a) && !isDaemon(a) && a !== mail.from);
  if (loose.length) return [{ address: loose[0]!, diagnostic: text }];
  // the original message's recipient
  const to = mail.original ? addressesIn(header(mail.original, 'to')).filter((a) => !isDaemon(a)) : [];
  if (to.length === 1) return [{ address: to[0]!, diagnostic: text }];
  return null;
}
