import crypto from 'node:crypto';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import type { DkimKey } from './dkim';

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 bytes after it are the raw key RFC 8463 publishes. */
const ED25519_SPKI_PREFIX_BYTES = 12;

export interface KeyPairColumns {
  selector: string;
  rsaPrivateKeyEnc: string;
  rsaPublicKey: string;
  ed25519PrivateKeyEnc: string;
  ed25519PublicKey: string;
}

/**
 * A selector for a new key pair: `ms` and the date, with a few random letters so two rotations in a day differ
 * (`ms20261126ab3`). Its records are `<selector>r._domainkey` (RSA) and `<selector>e._domainkey` (Ed25519).
 */
export function newSelector(now = new Date()): string {
  return `ms${now.toISOString().slice(0, 10).replace(/-/g, '')}${crypto.randomBytes(2).toString('hex')}`;
}

/** A new RSA 2048 and Ed25519 pair, the private keys encrypted with SECRET_KEY. */
export function generateKeyPairs(selector = newSelector()): KeyPairColumns {
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ed = crypto.generateKeyPairSync('ed25519');
  const secret = config().secretKey;
  return {
    selector,
    rsaPrivateKeyEnc: encryptSecret(rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), secret),
    rsaPublicKey: rsa.publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    ed25519PrivateKeyEnc: encryptSecret(ed.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), secret),
    ed25519PublicKey: ed.publicKey.export({ type: 'spki', format: 'der' }).subarray(ED25519_SPKI_PREFIX_BYTES).toString('base64'),
  };
}

/** The two signing keys of a pair, decrypted and parsed (worker only: DomainSigner keeps them for a while). */
export function signingKeys(pair: { selector: string; rsaPrivateKeyEnc: string; ed25519PrivateKeyEnc: string }): DkimKey[] {
  const secret = config().secretKey;
  return [
    { selector: rsaSelector(pair.selector), algorithm: 'rsa-sha256', privateKey: crypto.createPrivateKey(decryptSecret(pair.rsaPrivateKeyEnc, secret)) },
    { selector: ed25519Selector(pair.selector), algorithm: 'ed25519-sha256', privateKey: crypto.createPrivateKey(decryptSecret(pair.ed25519PrivateKeyEnc, secret)) },
  ];
}

/**
 * A mailbox's own DKIM key (docs/mailboxes.md: its selector and PEM, encrypted at rest), parsed: RSA or Ed25519 by the
 * key itself. The PEM was checked when it was stored.
 */
export function mailboxSigningKey(m: { dkimSelector: string; dkimPrivateKeyEnc: string }): DkimKey {
  const privateKey = crypto.createPrivateKey(decryptSecret(m.dkimPrivateKeyEnc, config().secretKey));
  return { selector: m.dkimSelector, algorithm: privateKey.asymmetricKeyType === 'ed25519' ? 'ed25519-sha256' : 'rsa-sha256', privateKey };
}

export const rsaSelector = (base: string) => `${base}r`;
export const ed25519Selector = (base: string) => `${base}e`;
