/**
 * A small, forgiving MIME reader for bounce reports (docs/inbound.md): headers, nested multiparts, base64 and
 * quoted-printable, charsets through TextDecoder. Pure and synchronous; never throws on a malformed message.
 */
export interface Part {
  headers: Headers;
  /** lower-cased media type, `text/plain` when absent */
  type: string;
  params: Record<string, string>;
  /** decoded text of a leaf part ('' for a multipart) */
  body: string;
  parts: Part[];
}

/** Lower-cased header name -> values in order. */
export type Headers = Map<string, string[]>;

export function header(h: Headers, name: string): string {
  return h.get(name.toLowerCase())?.[0] ?? '';
}

/** Splits `raw` (CRLF or LF) into the header block and the body. */
export function splitHead(raw: string): { head: string; body: string } {
  const m = /\r?\n\r?\n/.exec(raw);
  if (!m) return { head: raw, body: '' };
  return { head: raw.slice(0, m.index), body: raw.slice(m.index + m[0].length) };
}

export function parseHeaders(head: string): Headers {
  const out: Headers = new Map();
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  let last: { name: string; index: number } | null = null;
  for (const line of unfolded.split(/\r?\n/)) {
    const m = /^([!-9;-~]+)[ \t]*:[ \t]*(.*)$/.exec(line);
    if (!m) {
      // a continuation a server forgot to indent (`boundary="..."` on a line of its own)
      if (last && /^\s*[\w-]+\s*=/.test(line)) {
        const list = out.get(last.name)!;
        list[last.index] = `${list[last.index]} ${line.trim()}`;
      }
      continue;
    }
    const name = m[1]!.toLowerCase();
    const list = out.get(name) ?? [];
    list.push(decodeWords(m[2]!.trim()));
    out.set(name, list);
    last = { name, index: list.length - 1 };
  }
  return out;
}

function decoder(charset: string): { decode(input: Uint8Array): string } {
  try {
    return new TextDecoder(charset || 'utf-8');
  } catch {
    return new TextDecoder('latin1');
  }
}

/** RFC 2047 encoded words. */
export function decodeWords(value: string): string {
  if (!value.includes('=?')) return value;
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([bqBQ])\?([^?]*)\?=/g, (_, charset: string, enc: string, text: string) => {
      const bytes = enc.toLowerCase() === 'b' ? Buffer.from(text, 'base64') : qpBytes(text.replace(/_/g, ' '));
      return decoder(charset.replace(/\*.*$/, '')).decode(bytes);
    });
}

function qpBytes(text: string): Buffer {
  const s = text.replace(/=\r?\n/g, '');
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '=' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      out.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else out.push(s.charCodeAt(i) & 0xff);
  }
  return Buffer.from(out);
}

/** `type/subtype; a=b; c="d"` */
export function contentType(value: string): { type: string; params: Record<string, string> } {
  const [first, ...rest] = value.split(';');
  const params: Record<string, string> = {};
  for (const m of rest.join(';').matchAll(/([\w*-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;\s]+)/g)) {
    params[m[1]!.toLowerCase()] = m[2]!.replace(/^"|"$/g, '');
  }
  return { type: (first ?? '').trim().toLowerCase() || 'text/plain', params };
}

function decodeBody(body: string, encoding: string, charset: string): string {
  const enc = encoding.trim().toLowerCase();
  let bytes: Buffer;
  if (enc === 'base64') bytes = Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  else if (enc === 'quoted-printable') bytes = qpBytes(body);
  else if (!/[\x80-\xff]/.test(body)) return body;
  else if (charset && !/^us-ascii$/i.test(charset)) return decoder(charset).decode(Buffer.from(body, 'latin1'));
  else return utf8OrAsIs(body);
  return decoder(charset).decode(bytes);
}

/** 8-bit text with no charset said: UTF-8 when it is valid UTF-8 (RFC 6532), else left as read (latin1). */
function utf8OrAsIs(body: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(body, 'latin1'));
  } catch {
    return body;
  }
}

/**
 * Parses a message. The raw text is read as latin1 by the caller (one byte, one char), so 8-bit bodies survive until their
 * charset is known; 7-bit text is the same either way.
 */
export function parse(raw: string, depth = 0): Part {
  const { head, body } = splitHead(raw);
  const headers = parseHeaders(head);
  const { type, params } = contentType(header(headers, 'content-type'));
  const part: Part = { headers, type, params, body: '', parts: [] };
  if (type.startsWith('multipart/') && depth < 8) {
    // the declared boundary, else the one the body uses (some servers declare one and write another)
    let boundary = params.boundary ?? '';
    if (!boundary || !body.includes(`--${boundary}`)) boundary = /^--([^\s-][^\r\n]*?)[ \t]*\r?$/m.exec(body)?.[1] ?? boundary;
    const b = boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const pieces = body.split(new RegExp(`^--${b}(?:--)?[ \\t]*\\r?$`, 'm'));
    // pieces[0] is the preamble, the last one the epilogue when the closing delimiter is there
    for (const piece of pieces.slice(1)) {
      const text = piece.replace(/^\r?\n/, '');
      if (!text.trim()) continue;
      part.parts.push(parse(text, depth + 1));
    }
    if (!part.parts.length) part.body = body; // a boundary that never came: keep the text
    return part;
  }
  const charset = (params.charset ?? '').toLowerCase();
  part.body = decodeBody(body, header(headers, 'content-transfer-encoding'), charset);
  if ((type === 'message/rfc822' || type === 'message/global') && depth < 8) part.parts.push(parse(part.body, depth + 1));
  return part;
}

/** Every part, depth first, the message itself included. */
export function walk(part: Part): Part[] {
  return [part, ...part.parts.flatMap(walk)];
}

/** The text of an HTML part, roughly. */
export function htmlText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, '')
    .replace(/<br\s*\/?>|<\/(p|div|tr|li|h\d)>/gi, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&nbsp;/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}
