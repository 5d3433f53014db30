import { isIP } from 'node:net';
import type { AuthenticateResult } from 'mailauth';
import { checkResolver } from '../domains/resolver';
import { KeptAnswers } from '../kept';
import { lazy } from '../lazy';
import { splitHeader, type SplitHeader } from '../mime-header';

/**
 * SPF, DKIM, DMARC and ARC of a message, computed in the session with mailauth (docs/mx.md) through the
 * resolver of DNS_SERVERS. What the customer receives is `auth`; `disposition` is what the MX does about DMARC.
 */
export interface MxAuth {
  spf: { result: string };
  dkim: { domain: string; selector: string; result: string }[];
  dmarc: { result: string; policy: string | null };
  arc: { result: string };
}

export interface Session {
  ip: string;
  helo: string;
  mailFrom: string;
  /** the MX's own name, in the results it writes */
  mta: string;
}

/** mailauth, loaded by the first message: its members read when called (a test may watch them) */
const mailauth = lazy(() => require('mailauth') as typeof import('mailauth'));
/** the address parser mailauth's DKIM verifier reads the From with: its own nodemailer's, which may not be ours */
const addressparser = lazy(
  () => require(require.resolve('nodemailer/lib/addressparser', { paths: [require.resolve('mailauth')] })) as (text: string) => { address?: string }[],
);

export type Resolver = (name: string, type: string) => Promise<unknown[]>;

/** How long an answer is kept: as a local caching resolver would keep the SPF, DKIM and DMARC records of busy senders. */
const CACHE_MS = 60_000;
const CACHE_ENTRIES = 10_000;
const DEFINITE = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * The resolver the MX uses: DNS_SERVERS or the system's, its
 * answers and its definite "nothing there" kept CACHE_MS (a timeout or SERVFAIL is asked again next time). Made by
 * the MX's main and handed to the server.
 */
export function mxResolver(raw: Resolver = checkResolver().raw): Resolver {
  const kept = new KeptAnswers<unknown[]>({ ms: CACHE_MS, entries: CACHE_ENTRIES, keepFailure: (err) => DEFINITE.has((err as NodeJS.ErrnoException).code ?? '') });
  return (name, type) => kept.get(`${type} ${name.toLowerCase()}`, () => raw(name, type));
}

/** The fields mailauth reads beyond the From: with none of them, nothing is signed and there is no ARC chain. */
const SIGNED = new Set(['dkim-signature', 'arc-message-signature', 'arc-seal', 'arc-authentication-results']);

/**
 * True when the message is plain: a well-formed header ended by its empty line, with no DKIM signature and no ARC
 * field. Its results then need no reading of the message by mailauth (unsignedResult).
 */
export function isUnsigned(header: SplitHeader): boolean {
  return header.malformedAt === null && header.body > header.end && !header.fields.some((f) => SIGNED.has(f.name));
}

/**
 * The results of plain messages, by all they are computed from (the session's IP, HELO, envelope sender and name, and
 * the message's From fields), each kept CACHE_MS: the time the MX's resolver keeps the SPF and DMARC records read for
 * it, so a result kept is the one those records would give again. A temporary error is not kept. One for each MX,
 * beside its resolver (keptResults).
 */
export type KeptResults = KeptAnswers<MxAuth>;

export const keptResults = (): KeptResults =>
  new KeptAnswers<MxAuth>({ ms: CACHE_MS, entries: CACHE_ENTRIES, keep: (auth) => auth.spf.result !== 'temperror' && auth.dmarc.result !== 'temperror' });

/** With `kept`, a plain message's results are taken from it and kept there (keptPlainResult). */
export async function authenticateMessage(raw: Buffer, session: Session, resolver: Resolver, header: SplitHeader = splitHeader(raw), kept?: KeptResults): Promise<MxAuth> {
  if (isUnsigned(header)) return kept ? keptPlainResult(raw, header, session, resolver, kept) : unsignedResult(raw, header, session, resolver);
  // signed mail (and the rare header mailauth would read differently): every byte, as its body hashes need
  const result: AuthenticateResult = await mailauth().authenticate(raw, {
    ip: session.ip,
    helo: session.helo,
    sender: session.mailFrom,
    mta: session.mta,
    resolver: resolver as never,
    disableBimi: true,
  });
  return summary(result);
}

/**
 * A sender delivering many messages from one address (notifications, DSNs from one relay) has its SPF and DMARC worked
 * out once a minute, not for each message: they were about a tenth of the MX's CPU a message (bench/mx.ts).
 */
function keptPlainResult(raw: Buffer, header: SplitHeader, session: Session, resolver: Resolver, kept: KeptResults): Promise<MxAuth> {
  let key = `${session.ip}\n${session.helo}\n${session.mailFrom}\n${session.mta}`;
  for (const field of header.fields) if (field.name === 'from') key += `\n${raw.toString('utf8', field.start, field.end)}`;
  return kept.get(key, () => unsignedResult(raw, header, session, resolver));
}

/**
 * What mailauth's `authenticate` gives a plain message, from its own SPF and DMARC checks with the inputs it would
 * give them: DKIM "none" (not signed), ARC "none", SPF of the envelope, and DMARC of the From fields' addresses, read
 * as its DKIM verifier reads them. mailauth reads the header byte by byte to find them, about a tenth of the MX's CPU
 * a message (bench/mx.ts); test/mx/auth-part.test.ts holds the two to the same answers.
 */
async function unsignedResult(raw: Buffer, header: SplitHeader, session: Session, resolver: Resolver): Promise<MxAuth> {
  const { spf, dmarc } = mailauth();
  const headerFrom: string[] = [];
  for (const field of header.fields) {
    if (field.name !== 'from') continue;
    // as mailauth: the field's bytes as UTF-8, its value after the colon
    const line = raw.toString('utf8', field.start, field.end);
    for (const address of addressparser()(line.slice(line.indexOf(':') + 1).trim())) if (address.address) headerFrom.push(address.address);
  }
  const helo = session.helo || session.ip;
  const spfResult = await spf({ ip: session.ip, helo: helo && isIP(helo) ? `[${helo}]` : helo, sender: session.mailFrom, mta: session.mta, resolver: resolver as never });
  const arcResult = { status: { result: 'none' } };
  const dmarcResult = await dmarc({
    headerFrom,
    spfDomains: spfResult && spfResult.status.result === 'pass' && spfResult.domain ? [spfResult.domain] : [],
    dkimDomains: [],
    arcResult,
    resolver: resolver as never,
  } as never);
  return summary({ dkim: { results: [{ status: { result: 'none' } }] }, spf: spfResult, dmarc: dmarcResult || false, arc: arcResult } as unknown as AuthenticateResult);
}

export function summary(result: AuthenticateResult): MxAuth {
  const dmarc = result.dmarc || null;
  return {
    spf: { result: result.spf ? String(result.spf.status.result) : 'none' },
    dkim: (result.dkim?.results ?? []).map((r) => ({ domain: r.signingDomain ?? '', selector: r.selector ?? '', result: String(r.status.result) })),
    dmarc: { result: dmarc ? String(dmarc.status.result) : 'none', policy: dmarc && (dmarc as { policy?: string }).policy ? String((dmarc as { policy?: string }).policy) : null },
    arc: { result: result.arc ? String(result.arc.status.result) : 'none' },
  };
}

/** What DMARC asks of a failing message: refused at DATA (p=reject), held (p=quarantine), or nothing. */
export function dmarcDisposition(auth: MxAuth): 'reject' | 'quarantine' | null {
  if (auth.dmarc.result !== 'fail') return null;
  if (auth.dmarc.policy === 'reject') return 'reject';
  if (auth.dmarc.policy === 'quarantine') return 'quarantine';
  return null;
}
