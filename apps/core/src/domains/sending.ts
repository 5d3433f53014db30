import type Mail from 'nodemailer/lib/mailer';
import { PassThrough, type Readable } from 'node:stream';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import type { Tx } from '../db';
import { dkimSignatures, type DkimKey } from './dkim';
import { mailboxSigningKey, signingKeys } from './keys';
import { displayName, domainOfAddress } from './names';

/** Where one of an account's domains stands, as the send rule needs it. */
export interface DomainStanding {
  status: 'pending' | 'verified' | 'failed';
  reason: string | null;
}

/** How long an account's domain statuses are taken from memory before they are read again. */
const STANDINGS_TTL_MS = 10_000;

/**
 * The statuses of each account's domains, cached briefly per process (the API's createApp makes one, in `Sending`):
 * the send rule reads them on every send with REQUIRE_VERIFIED_DOMAIN, so a send costs no extra query while the
 * entry is fresh.
 */
export class DomainStandings {
  private readonly cache = new Map<number, { domains: Map<string, DomainStanding>; until: number }>();

  async of(db: Tx, accountId: number): Promise<Map<string, DomainStanding>> {
    const hit = this.cache.get(accountId);
    if (hit && hit.until > Date.now()) return hit.domains;
    const rows = await db.domain.findMany({ where: { accountId }, select: { name: true, status: true, reason: true } });
    const domains = new Map(rows.map((r) => [r.name, { status: r.status, reason: r.reason }]));
    this.cache.set(accountId, { domains, until: Date.now() + STANDINGS_TTL_MS });
    return domains;
  }
}

export interface FromRule {
  /** the key's mailbox address: always allowed as From (but its domain must be verified under REQUIRE_VERIFIED_DOMAIN) */
  mailboxAddress: string;
  /** the account's domains (DomainStandings); needed when `requireVerified` or `domainAddresses` */
  domains: Map<string, DomainStanding> | null;
  requireVerified: boolean;
  /** any address of a domain the account verified may be the From (the SMTP submission path keeps the From as written) */
  domainAddresses: boolean;
}

/**
 * May this account send with this From address? Null when it may, else the refusal in words, naming the domain and
 * what is missing. One rule for the API's POST /send and the SMTP submission path: the From is the key's mailbox
 * (or, where `domainAddresses`, an address of a domain the account verified); with REQUIRE_VERIFIED_DOMAIN its
 * domain must be verified. The reason only: each way in names what it refused (the API its `from` field, SMTP the
 * header From's address, a broadcast its mailbox).
 */
export function fromRefusal(rule: FromRule, from: string): string | null {
  const address = from.trim().toLowerCase();
  const domain = domainOfAddress(address);
  const standing = rule.domains?.get(domain);
  const ownDomainAddress = rule.domainAddresses && standing?.status === 'verified';
  if (address !== rule.mailboxAddress.toLowerCase() && !ownDomainAddress) {
    return `this key sends only from ${rule.mailboxAddress}${rule.domainAddresses ? ' or an address of a domain the account verified' : ''}`;
  }
  if (!rule.requireVerified || standing?.status === 'verified') return null;
  const shown = displayName(domain) === domain ? domain : `${displayName(domain)} (${domain})`;
  if (!standing) {
    return `the domain ${shown} is not a verified sending domain of this account: add it (POST /admin/api/domains), publish its DKIM and SPF records and check it`;
  }
  return `the domain ${shown} is not verified (${standing.status})${standing.reason ? `: ${standing.reason}` : ''}`;
}

/** Something a reader would take for an address: `local@domain.tld`, however it is dressed (quotes, brackets, spaces). */
const ADDRESS_LIKE = /[^\s@<>"'(),;:]+\s*(?:@|\uFF20)\s*[^\s@<>"'(),;:]+\.[^\s@<>"'(),;:]+/u;

/**
 * The From display name rule of every way in: a name that is itself an address (`"ceo@bank.example" <us@ours>`) is
 * refused, since many mail clients show the name alone and the reader would take it for the sender. The reason, or null.
 */
export function displayNameRefusal(name: string): string | null {
  return ADDRESS_LIKE.test(name) ? 'the display name may not be an address (mail clients show it as the sender)' : null;
}

/** Addresses whose answer ForeignMailboxes keeps at once; past it the oldest is forgotten. */
const FOREIGN_MAILBOXES_MAX = 10_000;

/**
 * The Reply-To and Sender rule of every way in: an address that is another account's mailbox is refused (a tenant
 * would otherwise have replies, or the sender shown, go to another tenant). Each address's answer is kept briefly per
 * process (as the domains' standings are), so a send naming the same Reply-To as the one before costs no query: the
 * accept stays one round trip. An API or SMTP process makes one (createSending).
 */
export class ForeignMailboxes {
  private readonly cache = new Map<string, { theirs: boolean; until: number }>();

  /** The reason naming the first address that is another account's mailbox, or null. */
  async refusal(db: Tx, accountId: number, addresses: string[]): Promise<string | null> {
    const wanted = [...new Set(addresses.map((a) => a.trim().toLowerCase()).filter(Boolean))];
    const now = Date.now();
    const unknown = wanted.filter((a) => !((this.cache.get(`${accountId} ${a}`)?.until ?? 0) > now));
    if (unknown.length) {
      const rows = await db.mailbox.findMany({ where: { address: { in: unknown, mode: 'insensitive' }, accountId: { not: accountId } }, select: { address: true } });
      const theirs = new Set(rows.map((r) => r.address.toLowerCase()));
      for (const address of unknown) this.remember(`${accountId} ${address}`, theirs.has(address), now);
    }
    const foreign = wanted.find((a) => this.cache.get(`${accountId} ${a}`)?.theirs);
    return foreign ? `${foreign} is another account's mailbox: it may not be a Reply-To or Sender` : null;
  }

  private remember(key: string, theirs: boolean, now: number): void {
    this.cache.delete(key);
    if (this.cache.size >= FOREIGN_MAILBOXES_MAX) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, { theirs, until: now + STANDINGS_TTL_MS });
  }
}

/**
 * Whether a broadcast or campaign sending from this mailbox may start: null, or the refusal naming its domain and what
 * is missing (only under REQUIRE_VERIFIED_DOMAIN; not a hot path, so read straight from the database).
 */
export async function mailboxStartRefusal(db: Tx, mailbox: Pick<Mailbox, 'accountId' | 'address'>): Promise<string | null> {
  if (!config().requireVerifiedDomain) return null;
  const domain = domainOfAddress(mailbox.address);
  const row = await db.domain.findUnique({ where: { accountId_name: { accountId: mailbox.accountId, name: domain } }, select: { status: true, reason: true } });
  const refusal = fromRefusal({ mailboxAddress: mailbox.address, domains: new Map(row ? [[domain, row]] : []), requireVerified: true, domainAddresses: false }, mailbox.address);
  return refusal && `the mailbox ${mailbox.address} cannot send: ${refusal}`;
}

/** How long a worker keeps a domain's signing keys before reading them again (a rotation shows within this). */
const KEYS_TTL_MS = 30_000;

/**
 * A worker's DKIM signing: with a mailbox's own key when it has one (docs/mailboxes.md), else with the keys of its
 * verified domain (docs/domains.md): the active pair of the From domain, RSA and Ed25519, both signatures with d= that
 * domain. Made once per worker process (createDelivery). dkim.ts signs, not nodemailer: nodemailer's signer makes RSA
 * signatures only (its dkim/sign.js calls createSign('RSA-SHA256')), and it reads the email through a header parser
 * and a body transform, then hands each piece to the socket as a write of its own. The keys are found before the send;
 * the bytes nodemailer composes are signed on their way to the wire (`signOnTheWay`), its signatures on top: one
 * composition, one buffer, one write.
 */
export class DomainSigner {
  private readonly cache = new Map<string, { keys: DkimKey[] | null; until: number }>();
  /** each mailbox's own key, parsed once per version of its row */
  private readonly mailboxKeys = new Map<number, { version: number; key: DkimKey }>();

  constructor(private readonly ttlMs = KEYS_TTL_MS) {}

  /** The mailbox's own key with its d= domain; null when it has none (or only part of one: then it signs nothing). */
  private ownKey(mailbox: Mailbox): { domain: string; keys: DkimKey[] } | null {
    if (!mailbox.dkimDomain || !mailbox.dkimSelector || !mailbox.dkimPrivateKeyEnc) return null;
    const version = mailbox.updatedAt.getTime();
    let hit = this.mailboxKeys.get(mailbox.id);
    if (!hit || hit.version !== version) {
      hit = { version, key: mailboxSigningKey({ dkimSelector: mailbox.dkimSelector, dkimPrivateKeyEnc: mailbox.dkimPrivateKeyEnc }) };
      this.mailboxKeys.set(mailbox.id, hit);
    }
    return { domain: mailbox.dkimDomain, keys: [hit.key] };
  }

  /** The signing keys of the mailbox's domain when the account verified it; null otherwise. */
  async keysFor(db: Tx, mailbox: Pick<Mailbox, 'accountId' | 'address'>): Promise<{ domain: string; keys: DkimKey[] } | null> {
    const domain = domainOfAddress(mailbox.address);
    const cacheKey = `${mailbox.accountId}:${domain}`;
    let hit = this.cache.get(cacheKey);
    if (!hit || hit.until <= Date.now()) {
      const row = await db.domain.findUnique({
        where: { accountId_name: { accountId: mailbox.accountId, name: domain } },
        select: { status: true, keys: { where: { state: 'active' }, orderBy: { id: 'desc' }, take: 1 } },
      });
      const pair = row?.status === 'verified' ? row.keys[0] : undefined;
      hit = { keys: pair ? signingKeys(pair) : null, until: Date.now() + this.ttlMs };
      this.cache.set(cacheKey, hit);
    }
    return hit.keys ? { domain, keys: hit.keys } : null;
  }

  /**
   * The email to be signed on its way to the wire (`WireSignedMail`): with the mailbox's own key when it has one (it
   * overrides the domain's), else with its verified domain's keys; the mail unchanged when neither. The keys are found
   * here, before the send; the signature is made over the bytes nodemailer writes (`signOnTheWay`, a stream plugin of
   * each transport), so the email is composed once.
   */
  async sign(db: Tx, mail: Mail.Options, mailbox: Mailbox): Promise<WireSignedMail> {
    const found = await this.keysOf(db, mail, mailbox);
    if (!found) return mail;
    return { ...mail, dkimOnTheWay: (raw: Buffer) => dkimSignatures(raw, found.domain, found.keys, SIGNED_HEADERS) };
  }

  private async keysOf(db: Tx, mail: Mail.Options, mailbox: Mailbox): Promise<{ domain: string; keys: DkimKey[] } | null> {
    // a message submitted over SMTP keeps its client's From, which may be any address of a verified domain: d= is its
    // domain (the From its submission parsed at accept, which composeMail gives as the raw mail's `from`)
    const from = mail.raw && typeof mail.from === 'string' ? mail.from : null;
    return mailbox.dkimPrivateKeyEnc ? this.ownKey(mailbox) : this.keysFor(db, from ? { accountId: mailbox.accountId, address: from } : mailbox);
  }
}

/** An email with the DKIM-Signature fields its bytes get on their way to the wire (`signOnTheWay`), when it is signed. */
export type WireSignedMail = Mail.Options & { dkimOnTheWay?: (raw: Buffer) => string };

/**
 * Up to this many bytes an unsigned email is gathered and handed to the socket as one write (`signOnTheWay`). nodemailer
 * streams a composed email in pieces (each header block, boundary and encoded line group), and the SMTP connection
 * writes each piece as it comes: a system call each, in the worker and in the server reading them. Gathered, the
 * writes of a broadcast copy cost the worker 0.04 ms of CPU instead of 0.12 (bench/broadcast.ts, profiled). Past it the
 * email streams on as it comes, so an attachment is never held whole.
 */
export const ONE_WRITE_BYTES = 64 * 1024;

/**
 * nodemailer's `stream` plugin that hands each email to the wire in as few writes as it can: a signed email is gathered
 * (as nodemailer's own DKIM signer does), the signatures made over its bytes and put on top, and it goes on as one
 * buffer; an unsigned one is gathered the same way up to ONE_WRITE_BYTES. One composition an email: building it first
 * and sending the bytes as `raw` composed each email twice (0.18 ms of CPU an email more, bench/README.md).
 */
export const signOnTheWay: Mail.PluginFunction = (mail, done) => {
  const signatures = (mail.data as WireSignedMail).dkimOnTheWay;
  mail.message.processFunc((input) => wireStream(input, signatures));
  done();
};

/** The email of `input` as it goes to the wire: signed by `signatures` (gathered whole), or gathered up to ONE_WRITE_BYTES. */
export function wireStream(input: Readable, signatures?: (raw: Buffer) => string): Readable {
  const output = new PassThrough();
  // the pieces gathered so far; null once an unsigned email passed ONE_WRITE_BYTES and streams on
  let chunks: Buffer[] | null = [];
  let length = 0;
  const pass = (chunk: Buffer) => {
    if (output.write(chunk)) return;
    input.pause();
    output.once('drain', () => input.resume());
  };
  input.on('data', (chunk: Buffer) => {
    if (!chunks) return pass(chunk);
    chunks.push(chunk);
    length += chunk.length;
    if (signatures || length <= ONE_WRITE_BYTES) return;
    const gathered = Buffer.concat(chunks, length);
    chunks = null;
    pass(gathered);
  });
  // nodemailer's contract: a process function reports its input's errors on its output
  input.once('error', (err) => output.destroy(err));
  input.once('end', () => {
    if (!chunks) return void output.end();
    try {
      const raw = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      if (!signatures) return void output.end(raw);
      output.end(signedBytes(raw, signatures));
    } catch (err) {
      output.destroy(err as Error);
    }
  });
  return output;
}

/** The headers signed: those a receiver shows or acts on, with List-Unsubscribe-Post (RFC 8058 section 4). */
export const SIGNED_HEADERS: readonly string[] = [
  'from', 'sender', 'reply-to', 'subject', 'date', 'message-id', 'to', 'cc', 'mime-version', 'content-type', 'content-transfer-encoding',
  'in-reply-to', 'references', 'list-id', 'list-unsubscribe', 'list-unsubscribe-post',
];

/** An email's bytes with the DKIM-Signature fields `signatures` makes over them put on top. */
export function signedBytes(raw: Buffer, signatures: (raw: Buffer) => string): Buffer {
  const head = Buffer.from(signatures(raw), 'latin1');
  return Buffer.concat([head, raw], head.length + raw.length);
}
