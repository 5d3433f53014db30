import type { AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { audited, type AuditContext } from '../audit';
import { config } from '../config';
import type { Db, Tx } from '../db';
import { BadRequest, NotFound, Unauthorized } from '../errors';
import { lazy } from '../lazy';

/** @simplewebauthn/server, loaded when a passkey is first used (processes that never see one do not carry it). */
const webauthn = lazy(() => require('@simplewebauthn/server') as typeof import('@simplewebauthn/server'));

/**
 * The relying party (docs/teams.md): the host the console is opened on, when it is PUBLIC_URL's host or `localhost`
 * (browsers refuse an IP address); the origin is the page's own.
 */
export interface RelyingParty {
  id: string;
  origin: string;
}

export function relyingParty(hostname: string, origin: string): RelyingParty {
  const publicHost = new URL(config().publicUrl).hostname.toLowerCase();
  const host = hostname.toLowerCase();
  if (host !== publicHost && host !== 'localhost') throw new BadRequest(`passkeys work on ${publicHost}${publicHost === 'localhost' ? '' : ' or localhost'} only: open the console there`);
  return { id: host, origin };
}

export interface PasskeyView {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export async function listPasskeys(db: Tx, userId: number): Promise<PasskeyView[]> {
  const rows = await db.passkey.findMany({ where: { userId }, orderBy: { createdAt: 'asc' } });
  return rows.map((p) => ({ id: p.id, name: p.name, created_at: p.createdAt.toISOString(), last_used_at: p.lastUsedAt?.toISOString() ?? null }));
}

/** Options for adding a passkey; the challenge is kept on the browser's session (`sessionId`) until it answers. */
export async function registrationOptions(db: Db, user: { id: number; email: string; name: string }, sessionId: string, rp: RelyingParty): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const existing = await db.passkey.findMany({ where: { userId: user.id }, select: { id: true, transports: true } });
  const options = await webauthn().generateRegistrationOptions({
    rpName: 'Mail service',
    rpID: rp.id,
    userName: user.email,
    userDisplayName: user.name,
    userID: new TextEncoder().encode(`user:${user.id}`),
    attestationType: 'none',
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
  });
  await db.userSession.update({ where: { id: sessionId }, data: { challenge: options.challenge } });
  return options;
}

/** The challenge of the session, used once: taken away whatever the answer. */
async function takeChallenge(db: Db, sessionId: string): Promise<string> {
  const row = await db.userSession.findUnique({ where: { id: sessionId }, select: { challenge: true } });
  if (!row?.challenge) throw new BadRequest('no passkey request is open in this browser: reload the page and try again');
  await db.userSession.update({ where: { id: sessionId }, data: { challenge: null } });
  return row.challenge;
}

function parsed<T>(json: string): T {
  try {
    const value = JSON.parse(json) as unknown;
    if (value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string') return value as T;
  } catch {
    // refused below
  }
  throw new BadRequest('response: the browser sent no passkey answer (is JavaScript on?)');
}

/** Adds the passkey the browser made for the session's challenge. */
export async function addPasskey(db: Db, userId: number, sessionId: string, name: string, responseJson: string, rp: RelyingParty, audit: AuditContext): Promise<PasskeyView> {
  const label = name.trim().slice(0, 100) || 'Passkey';
  const response = parsed<RegistrationResponseJSON>(responseJson);
  const expectedChallenge = await takeChallenge(db, sessionId);
  const result = await webauthn()
    .verifyRegistrationResponse({ response, expectedChallenge, expectedOrigin: rp.origin, expectedRPID: rp.id, requireUserVerification: false })
    .catch((err: Error) => {
      throw new BadRequest(`the passkey was not accepted: ${err.message}`);
    });
  if (!result.verified) throw new BadRequest('the passkey was not accepted');
  const { credential } = result.registrationInfo;
  const row = await audited(db, audit, { action: 'add-passkey', resource: 'user', id: userId, after: (p) => ({ id: userId, passkey: p.name }) }, (tx: Tx) =>
    tx.passkey.create({ data: { id: credential.id, userId, publicKey: Buffer.from(credential.publicKey), counter: BigInt(credential.counter), transports: credential.transports ?? [], name: label } }),
  );
  return { id: row.id, name: row.name, created_at: row.createdAt.toISOString(), last_used_at: null };
}

export async function removePasskey(db: Db, userId: number, id: string, audit: AuditContext): Promise<void> {
  const row = await db.passkey.findFirst({ where: { id, userId } });
  if (!row) throw new NotFound('no such passkey of yours');
  await audited(db, audit, { action: 'remove-passkey', resource: 'user', id: userId, before: () => Promise.resolve({ id: userId, passkey: row.name }) }, (tx: Tx) => tx.passkey.delete({ where: { id } }));
}

/** Options for signing in with one of the user's passkeys; the challenge is kept on the pending session. */
export async function authenticationOptions(db: Db, userId: number, sessionId: string, rp: RelyingParty): Promise<PublicKeyCredentialRequestOptionsJSON | null> {
  const passkeys = await db.passkey.findMany({ where: { userId }, select: { id: true, transports: true } });
  if (passkeys.length === 0) return null;
  const options = await webauthn().generateAuthenticationOptions({ rpID: rp.id, allowCredentials: passkeys.map((p) => ({ id: p.id, transports: p.transports })), userVerification: 'preferred' });
  await db.userSession.update({ where: { id: sessionId }, data: { challenge: options.challenge } });
  return options;
}

/** Checks a passkey's answer to the session's challenge; its signature counter must grow (a cloned key does not). */
export async function verifyPasskey(db: Db, userId: number, sessionId: string, responseJson: string, rp: RelyingParty, now = new Date()): Promise<void> {
  const response = parsed<AuthenticationResponseJSON>(responseJson);
  const expectedChallenge = await takeChallenge(db, sessionId);
  const passkey = await db.passkey.findFirst({ where: { id: response.id, userId } });
  if (!passkey) throw new Unauthorized('That passkey is not one of yours.');
  const credential = { id: passkey.id, publicKey: new Uint8Array(passkey.publicKey), counter: Number(passkey.counter), transports: passkey.transports as never };
  const result = await webauthn()
    .verifyAuthenticationResponse({ response, expectedChallenge, expectedOrigin: rp.origin, expectedRPID: rp.id, credential, requireUserVerification: false })
    .catch((err: Error) => {
      throw new Unauthorized(`The passkey was not accepted: ${err.message}`);
    });
  if (!result.verified) throw new Unauthorized('The passkey was not accepted.');
  await db.passkey.update({ where: { id: passkey.id }, data: { counter: BigInt(result.authenticationInfo.newCounter), lastUsedAt: now } });
}
