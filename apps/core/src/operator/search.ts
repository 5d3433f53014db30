import { narrow, type AccountScope } from '../account-scope';
import type { Tx } from '../db';
import { BadRequest } from '../errors';
import { publicBounce, type Bounce, type PublicBounce } from '../inbound/bounce-policy';
import { PAGE_SIZE, type Page } from '../keyset';
import { Joi, dbId, iso, validate } from '../validate';
import { searchMessageRows, type MessageSearchSql } from './repository';

export const MESSAGE_STATUSES = ['queued', 'sending', 'sent', 'deferred', 'failed', 'bounced', 'cancelled'] as const;

/** What one search box line is read as (docs/operator.md, "Finding a message"). */
export type SearchKind = 'all' | 'id' | 'message_id' | 'recipient' | 'domain' | 'subject';

export interface MessageSearch {
  q?: string;
  status?: string;
  /** a day (YYYY-MM-DD, UTC, from its start) or an ISO time */
  from?: string;
  /** a day (up to its end) or an ISO time */
  to?: string;
  account?: number;
  before?: string;
  limit?: number;
}

const when = () =>
  Joi.string()
    .trim()
    .max(40)
    .pattern(/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/)
    .allow('')
    .messages({ 'string.pattern.base': '{#label} must be a day (YYYY-MM-DD, UTC) or an ISO time' });

export const messageSearchQuery = Joi.object<MessageSearch>({
  q: Joi.string().trim().max(300).allow(''),
  status: Joi.string().valid(...MESSAGE_STATUSES, ''),
  from: when(),
  to: when(),
  account: dbId(),
  before: Joi.string().max(80).pattern(/^\d{1,15}_[0-9a-f-]{36}$/).messages({ 'string.pattern.base': 'before must be a cursor from an earlier page' }),
  limit: Joi.number().integer().min(1).max(500).default(PAGE_SIZE),
});

export interface FoundMessage {
  id: string;
  account: number;
  kind: string;
  to: string;
  subject: string;
  status: string;
  attempts: number;
  last_error: string | null;
  smtp_response: string | null;
  message_id: string;
  bounce: PublicBounce | null;
  created_at: string;
  sent_at: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DOMAIN = /^@?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63})$/i;
const ADDRESS = /^[^\s@<>]+@[^\s@<>]+$/;

/**
 * How the box's text is read: a message id (UUID), a Message-ID (`<...@...>`), an address (the recipient), a domain
 * (`defer.test` or `@defer.test`: every recipient at it), else words that must all be in the subject.
 */
export function readQuery(q: string): { kind: SearchKind; value: string } {
  const text = q.trim();
  if (!text) return { kind: 'all', value: '' };
  if (UUID.test(text)) return { kind: 'id', value: text.toLowerCase() };
  if (/^<[^\s<>]+@[^\s<>]+>$/.test(text)) return { kind: 'message_id', value: text };
  if (ADDRESS.test(text)) return { kind: 'recipient', value: text.toLowerCase() };
  const domain = DOMAIN.exec(text);
  if (domain) return { kind: 'domain', value: domain[1]!.toLowerCase() };
  return { kind: 'subject', value: text };
}

/** A day's start (or, with `end`, the next day's start) or the time given. */
function instant(value: string | undefined, field: string, end: boolean): Date | undefined {
  if (!value) return undefined;
  const day = /^\d{4}-\d{2}-\d{2}$/.test(value);
  const at = new Date(day ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(at.getTime())) throw new BadRequest(`${field} is not a real day or time`);
  return day && end ? new Date(at.getTime() + 86_400_000) : at;
}

/**
 * Messages of every account that match, newest first, a page at a time by keyset (`before`: the `next` of the page
 * before). Each kind of query reads its own index, so a page costs about the same on a year of rows as on a day's.
 */
export async function searchMessages(db: Tx, input: unknown, scope?: AccountScope): Promise<Page<FoundMessage> & { kind: SearchKind }> {
  const s = validate(messageSearchQuery, input ?? {}) as MessageSearch & { limit: number };
  const { kind, value } = readQuery(s.q ?? '');
  const from = instant(s.from, 'from', false);
  const to = instant(s.to, 'to', true);
  if (from && to && from >= to) throw new BadRequest('from must be before to');
  const cursor = s.before ? /^(\d{1,15})_([0-9a-f-]{36})$/.exec(s.before) : null;
  const sql: MessageSearchSql = {
    status: s.status || undefined,
    // a person's search covers their own accounts (docs/teams.md); an account outside them finds nothing
    account: narrow(scope, s.account),
    from,
    to,
    before: cursor ? { at: new Date(Number(cursor[1])), id: cursor[2]! } : undefined,
    limit: s.limit + 1,
  };
  if (kind === 'id') sql.id = value;
  else if (kind === 'message_id') sql.messageId = value;
  else if (kind === 'recipient') sql.recipient = value;
  else if (kind === 'domain') sql.domain = value;
  else if (kind === 'subject') sql.words = value;
  const rows = await searchMessageRows(db, sql);
  const page = rows.slice(0, s.limit);
  const last = page[page.length - 1];
  return {
    kind,
    rows: page.map((m) => ({
      id: m.id,
      account: m.account_id,
      kind: m.kind,
      to: m.to,
      subject: m.subject,
      status: m.status,
      attempts: m.attempts,
      last_error: m.last_error,
      smtp_response: m.smtp_response,
      message_id: m.message_id_header,
      bounce: publicBounce(m.bounce as Bounce | null),
      created_at: m.created_at.toISOString(),
      sent_at: iso(m.sent_at),
    })),
    next: rows.length > s.limit && last ? `${last.created_at.getTime()}_${last.id}` : null,
  };
}
