import { rawQuery, type Tx } from '../db';

/**
 * Subscribers across every list (docs/lists.md): by part of an address, or by a custom field (`plan=pro`) or a tag
 * (`tag:vip`); newest first, a keyset page at a time. And, for one subscriber's page, the other lists the same address
 * is on in its account and the mail the service wrote to it.
 */
export interface SubscriberHit {
  id: number;
  email: string;
  name: string;
  status: string;
  tags: string[];
  list: { id: number; name: string; account: number };
  created_at: Date;
}

export type SubscriberQuery = { kind: 'address'; text: string } | { kind: 'field'; field: string; value: string } | { kind: 'tag'; tag: string };

/** `plan=pro` a field, `tag:vip` a tag, anything else part of an address. */
export function subscriberQuery(text: string): SubscriberQuery {
  const tag = /^tag:(.+)$/i.exec(text);
  if (tag) return { kind: 'tag', tag: tag[1]!.trim() };
  const pair = /^([A-Za-z0-9_.-]{1,64})\s*=\s*(.*)$/.exec(text);
  if (pair && !text.includes('@')) return { kind: 'field', field: pair[1]!, value: pair[2]!.trim() };
  return { kind: 'address', text: text.toLowerCase() };
}

export async function searchSubscribers(db: Tx, q: SubscriberQuery, page: { before?: number; limit: number }): Promise<{ rows: SubscriberHit[]; next: number | null }> {
  const [match, values]: [string, unknown[]] =
    q.kind === 'tag' ? ['$1 = ANY(s.tags)', [q.tag]] : q.kind === 'field' ? ['s.fields ->> $1 = $2', [q.field, q.value]] : ['s.email LIKE $1', [`%${q.text.replace(/[\\%_]/g, '\\$&')}%`]];
  const n = values.length;
  const rows = await rawQuery<Omit<SubscriberHit, 'list'> & { list_id: number; list_name: string; account: number }>(
    db,
    `SELECT s.id, s.email, s.name, s.status::text AS status, s.tags, s.created_at, l.id AS list_id, l.name AS list_name, l.account_id AS account
     FROM subscribers s JOIN lists l ON l.id = s.list_id
     WHERE ${match} AND s.id < $${n + 1} ORDER BY s.id DESC LIMIT $${n + 2}`,
    [...values, page.before ?? 2_147_483_647, page.limit + 1],
  );
  const shown = rows.slice(0, page.limit).map(({ list_id, list_name, account, ...s }) => ({ ...s, list: { id: list_id, name: list_name, account } }));
  return { rows: shown, next: rows.length > page.limit ? shown[shown.length - 1]!.id : null };
}

/** The lists of the subscriber's account that hold the same address (this one included), and the last mail to it. */
export async function subscriberReach(db: Tx, id: number) {
  const lists = await rawQuery<{ id: number; list_id: number; list_name: string; status: string; created_at: Date }>(
    db,
    `SELECT o.id, l.id AS list_id, l.name AS list_name, o.status::text AS status, o.created_at
     FROM subscribers s JOIN lists sl ON sl.id = s.list_id
     JOIN lists l ON l.account_id = sl.account_id JOIN subscribers o ON o.list_id = l.id AND o.email = s.email
     WHERE s.id = $1 ORDER BY l.name`,
    [id],
  );
  const mail = await rawQuery<{ id: string; kind: string; subject: string; status: string; created_at: Date; opened: boolean }>(
    db,
    `SELECT m.id, m.kind::text AS kind, m.subject, m.status::text AS status, m.created_at,
            EXISTS (SELECT 1 FROM message_opens o WHERE o.message_id = m.id) AS opened
     FROM subscribers s JOIN lists l ON l.id = s.list_id JOIN messages m ON m.account_id = l.account_id AND m."to" = s.email
     WHERE s.id = $1 ORDER BY m.created_at DESC LIMIT 20`,
    [id],
  );
  return { lists, mail };
}
