import type { List, Mailbox, Subscriber } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { cancelUnclaimedBroadcastCopiesOf, cancelUnclaimedCopiesOf } from '../broadcasts/repository';
import { subscriberOfToken } from '../subscriber-links/unsubscribe';
import { recordConsent, type ConsentContext } from '../consent/repository';
import { addDeliveryJobs, storeMessages } from '../delivery/outbox';
import { markEnqueued } from '../delivery/repository';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { withinRedisDeadline } from '../redis';
import { lockSubscriber } from '../subscribers/repository';
import { removeSubscriber } from '../subscribers/machine';
import { subscriberOfPreferencesToken } from '../subscriber-links/preferences';
import { choicesOf, isIn, requireTopics, topicsOf, type Topic } from '../topics';
import { renderPreferencesLinkEmail } from './email';

/**
 * The preference centre (docs/preferences.md): what a subscriber sees on their signed page and what they may change
 * there (topics, a pause of 30 or 90 days, their name, leaving), the per-topic one-click of a topic's email, and the
 * "send me my link" email. Each change goes through one transaction that locks the subscriber row and writes its
 * consent ledger row.
 */

/** The pauses the page offers, in days. */
export const PAUSE_DAYS = [30, 90] as const;
export type PauseDays = (typeof PAUSE_DAYS)[number];

type Loaded = Subscriber & { list: List };

export interface PreferencesView {
  listName: string;
  email: string;
  name: string;
  /** active (or pending) on the list; false once they left, bounced or complained */
  subscribed: boolean;
  pausedUntil: Date | null;
  /** the topics the page shows: the public ones, and a private one the person is in */
  topics: (Topic & { in: boolean })[];
}

async function load(db: Tx, token: string): Promise<Loaded | null> {
  const id = subscriberOfPreferencesToken(token);
  return id === null ? null : db.subscriber.findUnique({ where: { id }, include: { list: true } });
}

function viewOf(subscriber: Loaded, now = new Date()): PreferencesView {
  const choices = choicesOf(subscriber);
  return {
    listName: subscriber.list.name,
    email: subscriber.email,
    name: subscriber.name,
    subscribed: subscriber.status === 'active' || subscriber.status === 'pending',
    pausedUntil: subscriber.pausedUntil && subscriber.pausedUntil > now ? subscriber.pausedUntil : null,
    topics: topicsOf(subscriber.list)
      .map((t) => ({ ...t, in: isIn(t, choices) }))
      .filter((t) => t.public || t.in),
  };
}

/** The page of a preference token (GET: changes nothing); null for a token that does not verify. */
export async function preferencesOf(db: Db, token: string): Promise<PreferencesView | null> {
  const subscriber = await load(db, token);
  return subscriber ? viewOf(subscriber) : null;
}

export interface PreferenceChanges {
  /** the topics the person is in after the change, of those the page showed; every other shown topic is out */
  topics?: string[];
  name?: string;
  pause?: PauseDays | 'resume';
}

/**
 * Saves the page's form: topics (each shown topic in or out as ticked), the name, a pause or its end. A token that does
 * not verify answers null and changes nothing; a person who left can change nothing but reads the page. A topic the
 * list does not have is refused (400) and nothing is saved.
 */
export async function savePreferences(db: Db, token: string, changes: PreferenceChanges, consent: ConsentContext, now = new Date()): Promise<PreferencesView | null> {
  const id = subscriberOfPreferencesToken(token);
  if (id === null) return null;
  return db.$transaction(async (tx) => {
    await lockSubscriber(tx, id);
    const subscriber = await tx.subscriber.findUnique({ where: { id }, include: { list: true } });
    if (!subscriber) return null;
    const before = viewOf(subscriber, now);
    if (!before.subscribed) return before;
    const data: { topics?: Record<string, boolean>; name?: string; pausedUntil?: Date | null } = {};
    if (changes.topics) {
      requireTopics(subscriber.list, changes.topics);
      const choices = { ...choicesOf(subscriber) };
      const changed: Record<string, boolean> = {};
      for (const topic of before.topics) {
        const wanted = changes.topics.includes(topic.id);
        if (wanted !== topic.in) changed[topic.id] = wanted;
        choices[topic.id] = wanted;
      }
      if (Object.keys(changed).length) {
        data.topics = choices;
        await recordConsent(tx, id, 'topics', consent, { changed });
      }
    }
    if (changes.name !== undefined && changes.name !== subscriber.name) {
      data.name = changes.name;
      await recordConsent(tx, id, 'name', consent, { name: changes.name });
    }
    if (changes.pause === 'resume' && before.pausedUntil) {
      data.pausedUntil = null;
      await recordConsent(tx, id, 'pause', consent, { until: null });
    } else if (typeof changes.pause === 'number') {
      data.pausedUntil = new Date(now.getTime() + changes.pause * 86_400_000);
      await recordConsent(tx, id, 'pause', consent, { days: changes.pause, until: data.pausedUntil.toISOString() });
      await cancelUnclaimedBroadcastCopiesOf(tx, id, null, 'the person paused their emails');
    }
    if (!Object.keys(data).length) return before;
    const saved = await tx.subscriber.update({ where: { id }, data, include: { list: true } });
    return viewOf(saved, now);
  });
}

/** The page's "leave the list": the state machine's unsubscribe, then the person's unclaimed copies cancelled. */
export async function leaveByPreferences(db: Db, token: string, consent: ConsentContext): Promise<PreferencesView | null> {
  const subscriber = await load(db, token);
  if (!subscriber) return null;
  await removeSubscriber(db, subscriber.list, subscriber.email, consent);
  await cancelUnclaimedCopiesOf(db, subscriber.id);
  return preferencesOf(db, token);
}

/**
 * Per-topic one-click (RFC 8058): POST PUBLIC_URL/u/<unsubscribe token>/t/<topic ids> takes the person out of those
 * topics only, and they stay on the list. Null for a token that does not verify or a topic the list does not have.
 */
export async function leaveTopicsByToken(db: Db, token: string, topicIds: string[], consent: ConsentContext): Promise<{ listName: string; topics: Topic[] } | null> {
  const id = subscriberOfToken(token);
  if (id === null || !topicIds.length) return null;
  return db.$transaction(async (tx) => {
    await lockSubscriber(tx, id);
    const subscriber = await tx.subscriber.findUnique({ where: { id }, include: { list: true } });
    if (!subscriber) return null;
    const all = topicsOf(subscriber.list);
    const topics = topicIds.map((t) => all.find((a) => a.id === t));
    if (topics.some((t) => !t)) return null;
    const choices = choicesOf(subscriber);
    const changed = Object.fromEntries(topics.filter((t) => isIn(t!, choices)).map((t) => [t!.id, false]));
    if (Object.keys(changed).length) {
      await tx.subscriber.update({ where: { id }, data: { topics: { ...choices, ...changed } } });
      await recordConsent(tx, id, 'topics', consent, { changed });
    }
    await cancelUnclaimedBroadcastCopiesOf(tx, id, topicIds, 'the person left the topic');
    return { listName: subscriber.list.name, topics: topics as Topic[] };
  });
}

/** What a per-topic link names, changing nothing (GET: link scanners prefetch). */
export async function inspectTopicLink(db: Db, token: string, topicIds: string[]): Promise<{ listName: string; topics: Topic[] } | null> {
  const id = subscriberOfToken(token);
  const subscriber = id === null ? null : await db.subscriber.findUnique({ where: { id }, include: { list: true } });
  if (!subscriber || !topicIds.length) return null;
  const all = topicsOf(subscriber.list);
  const topics = topicIds.map((t) => all.find((a) => a.id === t));
  return topics.some((t) => !t) ? null : { listName: subscriber.list.name, topics: topics as Topic[] };
}

/**
 * "Send me my link": mails the preference link to the address when it is an active subscriber of the list, and does
 * nothing otherwise; the caller answers the same either way (the page must not tell who is on the list).
 */
export async function mailPreferencesLink(db: Db, list: List & { mailbox: Mailbox }, email: string): Promise<void> {
  const subscriber = await db.subscriber.findUnique({ where: { listId_email: { listId: list.id, email } } });
  if (!subscriber || subscriber.status !== 'active') return;
  const content = renderPreferencesLinkEmail(list.name);
  const rows = await storeMessages(db, [
    { accountId: list.accountId, mailboxId: list.mailboxId, fromAddress: list.mailbox.address, kind: 'preferences', to: subscriber.email, subscriberId: subscriber.id, ...content },
  ]);
  const messages = rows.map((r) => ({ id: r.id! }));
  try {
    await withinRedisDeadline(addDeliveryJobs(messages));
    await markEnqueued(db, messages.map((m) => m.id));
  } catch (err) {
    // the row is committed: the reconciler queues it
    if (!noteOutage(err)) logger.warn({ err: (err as Error).message }, 'preference link email left for the reconciler');
  }
}
