import crypto from 'node:crypto';
import { splitHeader } from '../mime-header';

/** A key a domain signs with: its selector, its algorithm and its private key, parsed once (keys.ts signingKeys). */
export interface DkimKey {
  selector: string;
  algorithm: 'rsa-sha256' | 'ed25519-sha256';
  privateKey: crypto.KeyObject;
}

/**
 * DKIM-Signature header fields for an email (RFC 6376, `c=relaxed/relaxed`), one per key, each ending in CRLF, to be
 * put above the email as it is: RSA signs the canonical headers with SHA-256; Ed25519 signs their SHA-256 hash (RFC
 * 8463 section 3). The headers signed are those of `headerNames` the email has, each instance from the bottom up (RFC
 * 6376 section 5.4.2).
 *
 * Why not mailauth's signer: it parses each key's PEM again for every email (0.57 ms of an RSA signature's 0.85 ms on
 * the bench host) and reads the email through a stream parser; the worker signs every email of a verified domain.
 * mailauth still checks what this writes, in the tests (test/domains/dkim.test.ts).
 */
export function dkimSignatures(raw: Buffer, domain: string, keys: DkimKey[], headerNames: readonly string[], now = new Date()): string {
  const text = raw.toString('latin1');
  const header = splitHeader(raw);
  const fields = header.fields.map((f) => ({ name: f.name, line: text.slice(f.start, f.end) }));
  const bodyHash = crypto.createHash('sha256').update(relaxedBody(text.slice(header.body)), 'latin1').digest('base64');

  // the fields signed, each instance from the bottom up; h= names them in that order
  const signed: string[] = [];
  const names: string[] = [];
  for (const name of headerNames) {
    for (let i = fields.length - 1; i >= 0; i--) {
      if (fields[i]!.name === name) {
        signed.push(relaxedHeader(fields[i]!.line));
        names.push(name);
      }
    }
  }
  const canonical = signed.join('');
  const time = Math.floor(now.getTime() / 1000);

  return keys
    .map((key) => {
      // folded only after a tag's `;`: relaxed canonicalisation turns each fold into the space that was there
      const unsigned =
        `DKIM-Signature: v=1; a=${key.algorithm}; c=relaxed/relaxed; d=${domain}; s=${key.selector};\r\n` +
        ` t=${time}; bh=${bodyHash};\r\n h=${names.join(':')};\r\n b=`;
      const data = Buffer.from(canonical + relaxedHeader(unsigned).slice(0, -2), 'latin1');
      const signature =
        key.algorithm === 'rsa-sha256'
          ? crypto.sign('sha256', data, key.privateKey)
          : crypto.sign(null, crypto.createHash('sha256').update(data).digest(), key.privateKey);
      return `${unsigned}${fold(signature.toString('base64'))}\r\n`;
    })
    .join('');
}

/**
 * RFC 6376 section 3.4.2: name lower-cased, unfolded, runs of whitespace one space, none around the colon or at the
 * end. Whitespace is SP and HTAB only: the text is bytes read as latin1, where a UTF-8 character may end in 0xA0.
 * `field` is the field's text, folds included, with or without its last line break.
 */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const name = field.slice(0, colon).replace(/[ \t]+/g, '').toLowerCase();
  const value = field
    .slice(colon + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
  return `${name}:${value}\r\n`;
}

/** RFC 6376 section 3.4.4: whitespace runs one space, none at a line's end, no empty lines at the end, CRLF endings. */
export function relaxedBody(body: string): string {
  const lines = body
    .replace(/\r?\n/g, '\r\n')
    .replace(/[ \t]+/g, ' ')
    .replace(/ (?=\r\n|$)/g, '')
    .replace(/(\r\n)+$/, '');
  return lines === '' ? '' : `${lines}\r\n`;
}

/** A base64 signature in lines of at most 72 characters, each after a fold (whitespace in b= is ignored). */
function fold(base64: string): string {
  return base64.replace(/.{72}(?=.)/g, '$&\r\n ');
}
