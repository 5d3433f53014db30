import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { validate } from '../validate';
import type { Verifier } from '.';
import { verifyQuery, verifyRequest } from './schema';

/** POST /api/v1/verify: up to 100 addresses, each answered in the order given. The routes and the MCP tool call these. */
export async function verifyAddresses(db: Db, verifier: Verifier, key: ApiKey, body: unknown) {
  const { emails } = validate(verifyRequest, body);
  return { ok: true as const, results: await verifier.verify(db, key.accountId, emails) };
}

/** GET /api/v1/verify?email=: one item of the same shape. */
export async function verifyAddress(db: Db, verifier: Verifier, key: ApiKey, query: unknown) {
  const { email } = validate(verifyQuery, query);
  const [verification] = await verifier.verify(db, key.accountId, [email]);
  return { ok: true as const, ...verification! };
}
