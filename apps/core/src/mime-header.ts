/**
 * An email's header split into its fields (RFC 5322 2.2), the one reading shared by the DKIM signer
 * (domains/dkim.ts) and SMTP submission (submission/mime.ts). Read from the email's bytes: only the header is looked
 * at, however large the body.
 */
export interface HeaderField {
  /** lower-cased, without the spaces before its colon */
  name: string;
  /** the field's first byte, and the byte after its last line's line break (folded lines included) */
  start: number;
  end: number;
}

export interface SplitHeader {
  fields: HeaderField[];
  /** where the header ends: after its last field's line break */
  end: number;
  /** where the body starts: after the empty line (the text's length when there is none: a message of headers only) */
  body: number;
  /** the offset of the first line that is neither a field nor a folded line, or null */
  malformedAt: number | null;
}

/** RFC 5322 3.6.8: a field name is printable US-ASCII but for the colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;

const LF = 10;
const CR = 13;
const SPACE = 32;
const TAB = 9;
const COLON = 58;

/**
 * The header of `raw`: it ends at the first empty line, with CRLF or bare LF line breaks (an email starting with one
 * has no header); a line starting with a space or a tab continues the field above it.
 */
export function splitHeader(raw: Buffer): SplitHeader {
  const fields: HeaderField[] = [];
  let malformedAt: number | null = null;
  let position = 0;
  while (position < raw.length) {
    const lf = raw.indexOf(LF, position);
    const end = lf === -1 ? raw.length : lf + 1;
    if (lf === position || (lf === position + 1 && raw[position] === CR)) return { fields, end: position, body: end, malformedAt };
    if ((raw[position] === SPACE || raw[position] === TAB) && fields.length > 0) fields.at(-1)!.end = end;
    else {
      const colon = raw.subarray(position, end).indexOf(COLON);
      const name = colon > 0 ? raw.toString('latin1', position, position + colon).trimEnd() : '';
      if (FIELD_NAME.test(name)) fields.push({ name: name.toLowerCase(), start: position, end });
      else malformedAt ??= position;
    }
    position = end;
  }
  return { fields, end: raw.length, body: raw.length, malformedAt };
}
