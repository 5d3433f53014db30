import { newId } from '../ids';
import type { List, Mailbox, Prisma, Subscriber } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { addDeliveryJobs, storeMessages } from '../delivery/outbox';
import { markEnqueued } from '../delivery/repository';
import { LimitReached, NotFound } from '../errors';
import { emitSubscriberChange } from '../events/subscribers';
import { countUnsubscribe } from '../analytics/repository';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { withinRedisDeadline } from '../redis';
import { renderConfirmationEmail } from './email';
import { NEW_SUBSCRIBERS_PER_HOUR, reserveNewSubscriber, type Channel } from './limit';
import { FIELDS_MAX, TAGS_MAX, type FieldValue, type SubscriberInput } from './schema';
import type { FastAdds } from './fast-add';
import { CONFIRMATION_LINK_PLACEHOLDER, confirmationTokenOf } from './confirm-link';
import { issueToken } from './tokens';
import { insertPending, lockLiveSubscriptions, lockSubscriberAt, suppressedInAccount } from './repository';
import { becomeActive } from './activate';
import { recordConsent, recordSuppressions, type ConsentContext } from '../consent/repository';

/**
 * The subscriber state machine of docs/api.md. Internal states: pending, active, unsubscribed, bounced, complained.
 * Every transition into or out of `active` moves List.subscriberCount in the same transaction, so the count is exact;
 * every move into `active` is activate.ts becomeActive (the count, the welcome series, the ledger, the event).
 * Lock order everywhere: the subscriber row, then the list row (no deadlocks between adds, confirmations and removals).
 */
export type AddStatus = 'pending' | 'active' | 'exists' | 'gone' | 'suppressed';
export type RemoveStatus = 'unsubscribed' | 'gone' | 'absent';

/** A pending person gets the confirmation email again at most this often. */
export const RESEND_AFTER_MS = 3_600_000;

export type ListWithMailbox = List & { mailbox: Mailbox };

/** A list of the account by its key; another account's list is as unknown as a missing one. */
export async function requireAccountList(db: Tx, accountId: number, key: string): Promise<ListWithMailbox> {
  const list = await db.list.findFirst({ where: { key, accountId }, include: { mailbox: true } });
  if (!list) throw new NotFound(`no list with key "${key}"`);
  return list;
}

/** A list by its public key, for the hosted form. */
export function findListByKey(db: Tx, key: string): Promise<ListWithMailbox | null> {
  return db.list.findUnique({ where: { key }, include: { mailbox: true } });
}

/** `topics`: the hosted form's ticked and unticked public topics (docs/preferences.md), kept for a person new to the list. */
export type NewSubscriber = Omit<SubscriberInput, 'list'> & { topics?: Record<string, boolean> };

interface AddOutcome {
  status: AddStatus;
  /** a person new to the list was added: only this uses a slot of the hourly limit */
  created: boolean;
  messages: { id: string }[];
}

/**
 * Adds a person to a list. A person not yet on the list takes a slot of the list's hourly window first (refused: 429,
 * nothing written); the slot is given back when the answer turns out not to be a new person or the transaction fails.
 * The hosted form (`channel: 'form'`) always asks for confirmation: it cannot know who typed the address.
 */
export async function addSubscriber(db: Db, list: ListWithMailbox, input: NewSubscriber, channel: Channel, consent: ConsentContext = consentOf(channel), detail: Record<string, unknown> = {}): Promise<AddStatus> {
  const known = await db.subscriber.findUnique({ where: { listId_email: { listId: list.id, email: input.email } }, select: { id: true } });
  // a suppressed address is not a new person: it answers `suppressed` even when the window is full
  if (!known && (await isSuppressed(db, list.accountId, input.email))) return 'suppressed';
  const reservation = known ? undefined : await reserveNewSubscriber(list.key, channel);
  if (reservation && !reservation.taken) {
    throw new LimitReached(
      `the list took ${NEW_SUBSCRIBERS_PER_HOUR} new subscribers in the last hour; try again later`,
      reservation.retryAfterMs / 1000,
    );
  }
  let outcome: AddOutcome;
  try {
    outcome = await db.$transaction((tx) => applyAdd(tx, list, input, channel, new Date(), consent, detail));
  } catch (err) {
    if (reservation?.taken) await reservation.release();
    throw err;
  }
  if (reservation?.taken && !outcome.created) await reservation.release();
  await deliverAfterCommit(db, outcome.messages);
  return outcome.status;
}

/**
 * The operator's import (the console's CSV import): the same add as the API's, without the list's hourly window,
 * which guards against a leaked key or an abused form, not against the operator.
 */
export async function importSubscriber(db: Db, list: ListWithMailbox, input: NewSubscriber): Promise<AddStatus> {
  const outcome = await db.$transaction((tx) => applyAdd(tx, list, input, 'api', new Date(), { source: 'import' }, {}));
  await deliverAfterCommit(db, outcome.messages);
  return outcome.status;
}

/**
 * The API's add, by list key. The common case (a new person who needs no confirmation) goes through the shared
 * one-statement path after taking a slot of the list's hourly window; everything else, and a full window, through
 * `addSubscriber`'s transaction, which answers exactly as before. The slot is given back unless a new person was added.
 */
export async function addSubscriberByKey(db: Db, adds: FastAdds, accountId: number, listKey: string, input: NewSubscriber, keyId: number | null = null): Promise<AddStatus> {
  const reservation = await reserveNewSubscriber(listKey, 'api');
  if (reservation.taken) {
    let outcome;
    try {
      outcome = await adds.add({
        accountId,
        listKey,
        email: input.email,
        name: input.name ?? '',
        tags: unique(input.tags ?? []),
        fields: input.fields ?? {},
        confirmed: input.confirmed === true,
        keyId,
      });
    } catch (err) {
      await reservation.release();
      throw err;
    }
    if (outcome === 'active') return 'active';
    await reservation.release();
    if (outcome === 'suppressed') return 'suppressed';
  }
  return addSubscriber(db, await requireAccountList(db, accountId, listKey), input, 'api', { source: 'api_key' }, { key: keyId });
}

/** What the ledger says of an add when the caller says nothing more: the hosted form's, or an API key's. */
const consentOf = (channel: Channel): ConsentContext => ({ source: channel === 'form' ? 'form' : 'api_key' });

async function applyAdd(tx: Tx, list: ListWithMailbox, input: NewSubscriber, channel: Channel, now: Date, consent: ConsentContext, detail: Record<string, unknown>): Promise<AddOutcome> {
  if (await isSuppressed(tx, list.accountId, input.email)) return { status: 'suppressed', created: false, messages: [] };
  const needsConfirmation = channel === 'form' || (list.confirm && input.confirmed !== true);
  const inserted = await insertPending(tx, list.id, input.email);
  if (inserted !== undefined) {
    const fresh = { name: input.name ?? '', tags: unique(input.tags ?? []), fields: input.fields ?? {}, topics: input.topics ?? {} };
    if (needsConfirmation) {
      const subscriber = await tx.subscriber.update({ where: { id: inserted }, data: fresh });
      await recordConsent(tx, inserted, subscribeKind(consent), consent, { ...detail, ...topicChoices(input), status: 'pending' });
      await emitSubscriberChange(tx, list, input.email, 'pending');
      return { status: 'pending', created: true, messages: await sendConfirmation(tx, list, subscriber, now) };
    }
    await becomeActive(tx, { list, subscriberId: inserted, email: input.email, now, data: fresh, consent: { kind: subscribeKind(consent), context: consent, detail: { ...detail, ...topicChoices(input) } } });
    return { status: 'active', created: true, messages: [] };
  }

  const current = await lockSubscriber(tx, list.id, input.email);
  // an anonymous form post never rewrites what is stored about a person already on the list
  const changes = channel === 'api' ? merged(current, input) : {};
  switch (current.status) {
    case 'unsubscribed':
      return { status: 'gone', created: false, messages: [] };
    case 'bounced':
    case 'complained':
      return { status: 'suppressed', created: false, messages: [] };
    case 'active':
      await tx.subscriber.update({ where: { id: current.id }, data: changes });
      return { status: 'exists', created: false, messages: [] };
    case 'pending': {
      if (!needsConfirmation) {
        await becomeActive(tx, { list, subscriberId: current.id, email: current.email, now, data: changes, consent: { kind: 'confirm', context: consent, detail } });
        return { status: 'active', created: false, messages: [] };
      }
      const subscriber = await tx.subscriber.update({ where: { id: current.id }, data: changes });
      const due = !current.confirmationSentAt || now.getTime() - current.confirmationSentAt.getTime() >= RESEND_AFTER_MS;
      return { status: 'pending', created: false, messages: due ? await sendConfirmation(tx, list, subscriber, now) : [] };
    }
  }
}

/** Unsubscribes: active or pending -> unsubscribed; already left (or bounced) -> gone; not on the list -> absent. */
export async function removeSubscriber(db: Db, list: List, email: string, consent: ConsentContext = { source: 'api_key' }): Promise<RemoveStatus> {
  return db.$transaction(async (tx) => {
    const id = await lockSubscriberAt(tx, list.id, email);
    if (id === undefined) return 'absent';
    const current = await tx.subscriber.findUniqueOrThrow({ where: { id } });
    if (current.status !== 'active' && current.status !== 'pending') return 'gone';
    await tx.subscriber.update({ where: { id: current.id }, data: { status: 'unsubscribed', unsubscribedAt: new Date() } });
    await recordConsent(tx, current.id, 'unsubscribe', consent, { was: current.status });
    if (current.status === 'active') await uncount(tx, list.id);
    await countUnsubscribe(tx, list, current.id);
    await emitSubscriberChange(tx, list, current.email, 'unsubscribed');
    return 'unsubscribed';
  });
}

/**
 * The subscribers' part of an address suppressed (suppressions/suppress.ts suppressAddress, the one home of that
 * change): its pending and active subscriptions in every list of the account move to `reason` (`address` lower case),
 * keeping the counts exact, each with its ledger row.
 */
export async function suppressSubscriptions(tx: Tx, accountId: number, address: string, reason: 'bounced' | 'complained', detail: string): Promise<void> {
  const rows = await lockLiveSubscriptions(tx, accountId, address);
  if (!rows.length) return;
  await tx.subscriber.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { status: reason } });
  await recordSuppressions(tx, rows.map((r) => r.id), reason, detail);
  for (const row of rows.filter((r) => r.status === 'active')) await uncount(tx, row.list_id);
}

/** Bounced or complained anywhere in the account: the suppression list, or a subscription in any of its lists. */
export async function isSuppressed(tx: Tx, accountId: number, email: string): Promise<boolean> {
  return suppressedInAccount(tx, accountId, email);
}

async function lockSubscriber(tx: Tx, listId: number, email: string): Promise<Subscriber> {
  const id = await lockSubscriberAt(tx, listId, email);
  if (id === undefined) throw new Error(`no subscriber ${email} on list ${listId}`);
  return tx.subscriber.findUniqueOrThrow({ where: { id } });
}

/** A move out of `active` (a move into it is activate.ts becomeActive's). */
function uncount(tx: Tx, listId: number) {
  return tx.list.update({ where: { id: listId }, data: { subscriberCount: { decrement: 1 } } });
}

async function sendConfirmation(tx: Tx, list: ListWithMailbox, subscriber: Subscriber, now: Date): Promise<{ id: string }[]> {
  // the link's token is derived from the email's id and goes into the email only on the wire (confirm-link.ts)
  const id = newId();
  await issueToken(tx, subscriber.id, now, confirmationTokenOf(id));
  const content = renderConfirmationEmail({ listName: list.name, name: subscriber.name, link: CONFIRMATION_LINK_PLACEHOLDER });
  await tx.subscriber.update({ where: { id: subscriber.id }, data: { confirmationSentAt: now } });
  const rows = await storeMessages(tx, [
    {
      accountId: list.accountId,
      mailboxId: list.mailboxId,
      fromAddress: list.mailbox.address,
      id,
      kind: 'confirmation',
      to: subscriber.email,
      subscriberId: subscriber.id,
      ...content,
    },
  ]);
  return rows.map((row) => ({ id: row.id! }));
}

/**
 * The rows are committed: a Redis away or hanging only delays the email (the reconciler re-queues rows never
 * enqueued), and the request waits for it REDIS_DEADLINE_MS at most; the outage is the dependency watch's one line.
 */
async function deliverAfterCommit(db: Db, messages: { id: string }[]): Promise<void> {
  if (!messages.length) return;
  try {
    await withinRedisDeadline(addDeliveryJobs(messages));
  } catch (err) {
    if (!noteOutage(err)) logger.warn({ err: (err as Error).message, messages: messages.map((m) => m.id) }, 'confirmation email left for the reconciler');
    return;
  }
  await markEnqueued(db, messages.map((m) => m.id));
}

const unique = (values: string[]) => [...new Set(values)];

const topicChoices = (input: NewSubscriber) => (input.topics && Object.keys(input.topics).length ? { topics: input.topics } : {});

/** An import's add is an `import` in the ledger; every other add a `subscribe`. */
const subscribeKind = (consent: ConsentContext) => (consent.source === 'import' ? 'import' : 'subscribe');

/**
 * What a repeated add changes: a non-empty name replaces the old one; tags are the union and fields are merged with
 * the request's values winning. When the union passes the limits, the request's tags and fields are kept first.
 */
function merged(current: Subscriber, input: NewSubscriber): Prisma.SubscriberUpdateInput {
  const data: Prisma.SubscriberUpdateInput = {};
  if (input.name) data.name = input.name;
  if (input.tags?.length) {
    const given = unique(input.tags);
    const kept = current.tags.filter((t) => !given.includes(t)).slice(0, Math.max(0, TAGS_MAX - given.length));
    data.tags = [...kept, ...given];
  }
  if (input.fields && Object.keys(input.fields).length) {
    const old = (current.fields ?? {}) as Record<string, FieldValue>;
    const room = FIELDS_MAX - Object.keys(input.fields).length;
    const kept = Object.entries(old).filter(([k]) => !Object.hasOwn(input.fields!, k)).slice(0, Math.max(0, room));
    data.fields = { ...Object.fromEntries(kept), ...input.fields };
  }
  return data;
}
