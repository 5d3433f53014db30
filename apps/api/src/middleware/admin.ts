import type { RequestHandler } from 'express';
import { config } from '../../../core/src/config';
import { safeEqual } from '../../../core/src/crypto';
import { Unauthorized } from '../../../core/src/errors';
import { clientOf } from './client';
import type { AuthFailures } from './failures';

/** The admin token as `Authorization: Bearer <token>`, or as the password of basic auth (for the dashboard in a browser). */
function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * The admin token, checked before anything else of the request (its body included); a missing or wrong token counts
 * as a failure of the client's address, and an address past its allowance gets 429 unchecked (failures.ts).
 */
export function requireAdmin(failures: AuthFailures, options: { challenge?: boolean } = {}): RequestHandler {
  return (req, res, next) => {
    const locked = failures.lockedOut(clientOf(req));
    if (locked) throw locked;
    const token = presentedToken(req.get('authorization'));
    if (token && safeEqual(token, config().adminToken)) return next();
    if (options.challenge) res.set('WWW-Authenticate', 'Basic realm="mailservice admin", charset="UTF-8"');
    throw failures.refuse(clientOf(req), new Unauthorized(token ? 'the admin token is wrong' : 'the admin token is missing: send Authorization: Bearer <ADMIN_TOKEN>'));
  };
}
