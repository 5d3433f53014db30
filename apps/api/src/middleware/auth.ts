import type { RequestHandler } from 'express';
import type { ApiKey } from '../../../../generated/prisma/client';
import { requireProspects } from '../../../core/src/outreach/operations';
import { Forbidden, Unauthorized } from '../../../core/src/errors';
import type { Scope } from '../../../core/src/auth/keys';
import type { KeyAuthenticator } from '../../../core/src/auth/authenticator';
import { clientOf } from './client';
import type { AuthFailures } from './failures';
import { requireLiveKey } from '../../../core/src/sandbox';

// the key authenticator lives in core, so the SMTP submission server authenticates keys alike
export { KeyAuthenticator } from '../../../core/src/auth/authenticator';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      key: ApiKey;
      requestId: string;
    }
  }
}

/** RFC 6750: a 401 names the scheme it wants. */
const CHALLENGE = { 'WWW-Authenticate': 'Bearer' };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** The token of an `Authorization: Bearer <key>` header; undefined when the header is missing or not of that form. */
export function bearerToken(header: string | undefined): string | undefined {
  return header ? BEARER.exec(header)?.[1] : undefined;
}

/**
 * docs/api.md: `Authorization: Bearer <key>`; missing, malformed, unknown or revoked answers 401, and each counts
 * as a failure of the client's address; an address past its allowance gets 429 whatever it sends (failures.ts).
 */
export function requireKey(auth: KeyAuthenticator, failures: AuthFailures): RequestHandler {
  return async (req, res, next) => {
    // an address past its allowance is refused before its key is looked at: the answer says nothing of the key
    const locked = failures.lockedOut(clientOf(req));
    if (locked) throw locked;
    const header = req.get('authorization');
    if (!header) throw failures.refuse(clientOf(req), new Unauthorized('the Authorization header is missing: send Authorization: Bearer <API key>', CHALLENGE));
    const token = bearerToken(header);
    if (!token) throw failures.refuse(clientOf(req), new Unauthorized('the Authorization header must be "Bearer <API key>"', CHALLENGE));
    const key = await auth.authenticateOrExpired(token);
    if (key === 'expired') throw failures.refuse(clientOf(req), new Unauthorized('key expired', CHALLENGE));
    if (!key) throw failures.refuse(clientOf(req), new Unauthorized('the API key is unknown or revoked', CHALLENGE));
    res.locals.key = key;
    next();
  };
}

/** The scope each resource of the public API needs (docs/teams.md); reading (GET) is allowed by `read` as well. */
const RESOURCE_SCOPES: Record<string, Scope> = {
  send: 'send',
  batch: 'send',
  emails: 'send',
  messages: 'send',
  lists: 'subscribers',
  subscribers: 'subscribers',
  verify: 'subscribers',
  templates: 'templates',
  campaigns: 'prospects',
  prospects: 'prospects',
  inbound: 'inbound',
};

/** A key used outside its scopes answers 403 naming the scope. */
export const requireScope: RequestHandler = (req, res, next) => {
  const scope = RESOURCE_SCOPES[req.path.split('/')[1] ?? ''];
  const scopes = res.locals.key.scopes;
  if (scope && !scopes.includes(scope) && !((req.method === 'GET' || req.method === 'HEAD') && scopes.includes('read'))) throw new Forbidden(`this key lacks the scope ${scope}`);
  next();
};

/** docs/api.md: campaign and prospect requests need "May add prospects to campaigns". */
/** The routes past the send routes refuse a test key (403, docs/sandbox.md). */
export const refuseTestKeys: RequestHandler = (_req, res, next) => {
  requireLiveKey(res.locals.key);
  next();
};

export const requireProspectsPermission: RequestHandler = (_req, res, next) => {
  requireProspects(res.locals.key);
  next();
};
