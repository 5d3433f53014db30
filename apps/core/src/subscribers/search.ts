import type { Tx } from '../db';
import { mailToSubscriberRows, sameAddressRows, subscriberHitRows, type SubscriberQuery } from './repository';

export type { SubscriberQuery };

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

/** `plan=pro` a field, `tag:vip` a tag, anything else part of an address. */
export function subscriberQuery(text: string): SubscriberQuery {
  const tag = /^tag:(.+)$/i.exec(text);
  if (tag) return { kind: 'tag', tag: tag[1]!.trim() };
  const pair = /^([A-Za-z0-9_.-]{1,64})\s*=\s*(.*)$/.exec(text);
  if (pair && !text.includes('@')) return { kind: 'field', field: pair[1]!, value: pair[2]!.trim() };
  return { kind: 'address', text: text.toLowerCase() };
}

export async function searchSubscribers(db: Tx, q: SubscriberQuery, page: { before?: number; limit: number }): Promise<{ rows: SubscriberHit[]; next: number | null }> {
  const rows = await subscriberHitRows(db, q, page.before ?? 2_147_483_647, page.limit + 1);
  const shown = rows.slice(0, page.limit).map(({ list_id, list_name, account, ...s }) => ({ ...s, list: { id: list_id, name: list_name, account } }));
  return { rows: shown, next: rows.length > page.limit ? shown[shown.length - 1]!.id : null };
}

/** The lists of the subscriber's account that hold the same address (this one included), and the last mail to it. */
export async function subscriberReach(db: Tx, id: number) {
  const [lists, mail] = await Promise.all([sameAddressRows(db, id), mailToSubscriberRows(db, id, 20)]);
  return { lists, mail };
}
