import { config } from '../config';
import type { Tx } from '../db';
import { liveTrackingName } from './repository';

/**
 * The base of an account's click and open links: `https://<its tracking domain>` (with TRACK_LINK_PORT unless 443) once
 * its certificate is live, else PUBLIC_URL: a missing, pending or expired one never makes a broken link.
 */
export async function trackingBase(db: Tx, accountId: number): Promise<string> {
  const name = await liveTrackingName(db, accountId);
  if (!name) return config().publicUrl;
  const port = config().tracking.linkPort;
  return `https://${name}${port === 443 ? '' : `:${port}`}`;
}

/** The key authorization the CA asks for at /.well-known/acme-challenge/<token>, from any API process; null if unknown. */
export async function challengeAnswer(db: Tx, token: string): Promise<string | null> {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(token)) return null;
  const row = await db.acmeChallenge.findUnique({ where: { token } });
  return row?.keyAuthorization ?? null;
}
