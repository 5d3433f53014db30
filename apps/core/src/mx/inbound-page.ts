import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { dbId, Joi, validate } from '../validate';
import { listReceived, MAX_RECEIVED_PAGE } from '../inbound/received';
import { listDeliveredMx } from './list';

/**
 * GET /api/v1/inbound's query: `source` (`imap`, the mailboxes' emails, or `mx`, the MX's messages), the id to read
 * after (imap: a number, 0 from the start; mx: a message's id), how many, and (imap) one mailbox of the account.
 */
export const inboundPageQuery = Joi.object({
  source: Joi.string().valid('imap', 'mx').default('imap'),
  after: Joi.when('source', {
    is: 'mx',
    then: Joi.string().guid().description('mx: the previous page\'s next (a message id)'),
    // an inbound id is a bigint of its time, below 2^53 (docs/partitions.md)
    otherwise: Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER).default(0),
  }),
  limit: Joi.number().integer().min(1).max(MAX_RECEIVED_PAGE).default(50),
  mailbox: Joi.when('source', { is: 'mx', then: Joi.forbidden(), otherwise: dbId() }),
});

type InboundPage = { source: 'imap'; after: number; limit: number; mailbox?: number } | { source: 'mx'; after?: string; limit: number };

/**
 * The public API's and MCP's read of received emails (docs/inbound-events.md, docs/mx.md): any key of the account. It
 * reads the mailboxes' emails (inbound) or the MX's messages, so it stands here, with the MX, above inbound.
 */
export async function listInboundOf(db: Db, key: ApiKey, query: unknown) {
  const input = validate<InboundPage>(inboundPageQuery, query);
  if (input.source === 'mx') return { ok: true as const, ...(await listDeliveredMx(db, key.accountId, input)) };
  return { ok: true as const, ...(await listReceived(db, key.accountId, input)) };
}
