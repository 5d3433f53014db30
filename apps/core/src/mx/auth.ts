import type { AuthenticateResult } from 'mailauth';
import { checkResolver } from '../domains/resolver';
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

const authenticate = lazy(() => (require('mailauth') as typeof import('mailauth')).authenticate);

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
  const cache = new Map<string, { until: number; answer: Promise<unknown[]> }>();
  return (name, type) => {
    const key = `${type} ${name.toLowerCase()}`;
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && hit.until > now) return hit.answer;
    if (cache.size >= CACHE_ENTRIES) cache.clear();
    const answer = raw(name, type);
    cache.set(key, { until: now + CACHE_MS, answer });
    answer.catch((err: NodeJS.ErrnoException) => {
      if (!DEFINITE.has(err.code ?? '')) cache.delete(key);
    });
    return answer;
  };
}

/** The fields whose checks read the body (a DKIM signature's body hash; an ARC set's message signature). */
const BODY_SIGNATURES = new Set(['dkim-signature', 'arc-message-signature', 'arc-seal']);

/**
 * The bytes mailauth needs: the whole message when a field's check reads the body, else its header alone. SPF reads
 * the envelope, DMARC the From field and the other results, and with no signature there is no body hash to compute:
 * the answer is the same, without mailauth reading the body line by line (bench/mx.ts).
 */
export function authenticatedPart(raw: Buffer, header: SplitHeader = splitHeader(raw)): Buffer {
  return header.fields.some((f) => BODY_SIGNATURES.has(f.name)) ? raw : raw.subarray(0, header.body);
}

export async function authenticateMessage(raw: Buffer, session: Session, resolver: Resolver, header?: SplitHeader): Promise<MxAuth> {
  const result: AuthenticateResult = await authenticate()(authenticatedPart(raw, header), {
    ip: session.ip,
    helo: session.helo,
    sender: session.mailFrom,
    mta: session.mta,
    resolver: resolver as never,
    disableBimi: true,
  });
  return summary(result);
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
