import type { Session } from './auth';

/**
 * rspamd's score of a message (docs/mx.md): POST RSPAMD_URL/checkv2 with the envelope in headers, as rspamd's own
 * milter proxy sends it. A message whose score is over its route's spam_threshold is held.
 */
export interface SpamResult {
  score: number;
  symbols: string[];
}

const TIMEOUT_MS = 10_000;

export async function spamScore(rspamdUrl: string, raw: Buffer, session: Session, rcptTo: string[]): Promise<SpamResult> {
  const headers: Record<string, string> = { IP: session.ip, Helo: session.helo, From: session.mailFrom, 'Content-Type': 'message/rfc822' };
  const response = await fetch(`${rspamdUrl}/checkv2`, {
    method: 'POST',
    headers: { ...headers, ...Object.fromEntries(rcptTo.slice(0, 1).map((r) => ['Rcpt', r])) },
    body: new Uint8Array(raw),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`rspamd answered ${response.status}`);
  const body = (await response.json()) as { score?: number; symbols?: Record<string, unknown> };
  return { score: Number(body.score ?? 0), symbols: Object.keys(body.symbols ?? {}).sort() };
}
