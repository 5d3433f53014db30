import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { dbId, Joi, validate } from '../validate';
import { listReceived, MAX_RECEIVED_PAGE } from './received';

/** GET /api/v1/inbound's query: the id to read after (0: from the start), how many, and one mailbox of the account. */
export const inboundPageQuery = Joi.object({
  after: Joi.number().integer().min(0).max(2 ** 31 - 1).default(0),
  limit: Joi.number().integer().min(1).max(MAX_RECEIVED_PAGE).default(50),
  mailbox: dbId(),
});

/** The public API's and MCP's read of received emails (docs/inbound-events.md): any key of the account. */
export async function listInboundOf(db: Db, key: ApiKey, query: unknown) {
  const input = validate<{ after: number; limit: number; mailbox?: number }>(inboundPageQuery, query);
  return { ok: true as const, ...(await listReceived(db, key.accountId, input)) };
}
