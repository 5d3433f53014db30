import type { Db } from '../db';
import type { ConsentContext } from '../consent/repository';
import { removeSubscriber } from '../subscribers/machine';
import { subscriberOfToken } from '../subscriber-links/unsubscribe';
import { cancelUnclaimedCopiesOf } from './repository';

export interface UnsubscribeLink {
  /** null: no subscription has this token */
  listName: string | null;
  status: string | null;
}

/** What a /u/<token> link names, changing nothing (GET: link scanners prefetch). */
export async function inspectUnsubscribeLink(db: Db, token: string): Promise<UnsubscribeLink> {
  const id = subscriberOfToken(token);
  const subscriber = id === null ? null : await db.subscriber.findUnique({ where: { id }, include: { list: true } });
  return subscriber ? { listName: subscriber.list.name, status: subscriber.status } : { listName: null, status: null };
}

/**
 * One-click unsubscribe (RFC 8058) and the page's button: through the subscriber state machine (counts, and its
 * event), then the person's broadcast copies not yet claimed by a worker are cancelled (counted as `skipped`).
 * Idempotent: a second click finds the person gone and answers the same.
 */
export async function unsubscribeByToken(db: Db, token: string, consent: ConsentContext = { source: 'one_click' }): Promise<{ listName: string } | null> {
  const id = subscriberOfToken(token);
  const subscriber = id === null ? null : await db.subscriber.findUnique({ where: { id }, include: { list: true } });
  if (!subscriber) return null;
  await removeSubscriber(db, subscriber.list, subscriber.email, consent);
  await cancelUnclaimedCopiesOf(db, subscriber.id);
  return { listName: subscriber.list.name };
}
