import crypto from 'node:crypto';
import { config } from '../config';
import type { Db } from '../db';
import { endSequences, type Ending } from './end';
import { addToStopList } from '../stop-list/repository';
import { OPEN_STATUSES } from './outcomes';
import { lockProspect } from './repository/prospects';
import { fillMarker, UNSUBSCRIBE_URL_MARKER } from '../templates/markers';

/**
 * One-click opt-out of outreach emails (RFC 8058; docs/outreach.md): a campaign with `unsubscribe` (the default) puts
 * `List-Unsubscribe: <PUBLIC_URL/u/p<id>.<mac>>` and `List-Unsubscribe-Post` on each step, and `{{unsubscribe_url}}`
 * works in its bodies. The token names one prospect, signed like a subscription's (subscriber-links/unsubscribe.ts) under another
 * label, so neither kind can be turned into the other. Using it stop-lists the address in the account and ends the
 * prospect lost with reason `unsubscribed`.
 */
export const UNSUBSCRIBE_URL_PLACEHOLDER = UNSUBSCRIBE_URL_MARKER;

function mac(prospectId: number): string {
  return crypto.createHmac('sha256', config().secretKey).update(`prospect-unsubscribe:${prospectId}`).digest('base64url').slice(0, 32);
}

export const prospectUnsubscribeToken = (prospectId: number) => `p${prospectId}.${mac(prospectId)}`;

export const prospectUnsubscribeUrl = (prospectId: number) => `${config().publicUrl}/u/${prospectUnsubscribeToken(prospectId)}`;

/** A token of the prospect kind (not checked): the /u/ route hands it here rather than to the subscriptions. */
export const isProspectToken = (token: string) => token.startsWith('p');

/** The prospect a token names, or null for anything not made by prospectUnsubscribeToken under this SECRET_KEY. */
export function prospectOfToken(token: string): number | null {
  const match = /^p([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{32})$/.exec(token);
  if (!match) return null;
  const id = Number(match[1]);
  if (id > 2_147_483_647) return null;
  return crypto.timingSafeEqual(Buffer.from(mac(id)), Buffer.from(match[2]!)) ? id : null;
}

/** The stored headers of an outreach step: the link is put in on the way to the wire (delivery/compose.ts). */
export function optOutHeaders(): Record<string, unknown> {
  return {
    'List-Unsubscribe': { prepared: true, value: `<${UNSUBSCRIBE_URL_PLACEHOLDER}>` },
    'List-Unsubscribe-Post': { prepared: true, value: 'List-Unsubscribe=One-Click' },
  };
}

/** A stored step's body or header with the prospect's real link in place of the placeholder. */
export function withProspectUnsubscribeUrl<T extends string | null>(stored: T, prospectId: number): T {
  return fillMarker(stored, UNSUBSCRIBE_URL_MARKER, () => prospectUnsubscribeUrl(prospectId));
}

export interface OptOutLink {
  /** who the emails come from (the campaign's mailbox address) */
  sender: string;
  /** already opted out (or otherwise stop-listed) */
  done: boolean;
}

/** What a prospect's link names, changing nothing (GET: link scanners prefetch); null for an unknown prospect. */
export async function inspectProspectLink(db: Db, token: string): Promise<OptOutLink | null> {
  const id = prospectOfToken(token);
  const prospect = id === null ? null : await db.prospect.findUnique({ where: { id }, include: { campaign: { include: { mailbox: true } } } });
  if (!prospect) return null;
  return { sender: prospect.campaign.mailbox.address, done: prospect.status === 'lost' && prospect.reason === 'unsubscribed' };
}

/**
 * The opt-out: the address goes on the account's stop list (no campaign, broadcast or send of the account writes to it
 * again), and every open prospect of the account at that address, this one first, ends lost/unsubscribed with its
 * `prospect.state_changed` event. Idempotent: a second click changes nothing and answers the same.
 */
const UNSUBSCRIBED: Ending = { status: 'lost', reason: 'unsubscribed' };

export async function optOutByToken(db: Db, token: string): Promise<OptOutLink | null> {
  const id = prospectOfToken(token);
  if (id === null) return null;
  return db.$transaction(async (tx) => {
    if (!(await lockProspect(tx, id))) return null;
    const prospect = await tx.prospect.findUniqueOrThrow({ where: { id }, include: { campaign: { include: { mailbox: true } } } });
    const accountId = prospect.campaign.accountId;
    const now = new Date();
    if (prospect.email) {
      await addToStopList(tx, accountId, prospect.email);
      await endSequences(tx, { email: prospect.email, campaign: { accountId }, OR: [{ status: { in: OPEN_STATUSES } }, { status: 'lost', reason: 'no_reply' }] }, UNSUBSCRIBED, now);
    }
    // this prospect ends so even when it had already closed otherwise (a late click after no_reply, say)
    if (!(prospect.status === 'lost' && prospect.reason === 'unsubscribed')) {
      await endSequences(tx, { id, NOT: { status: 'lost', reason: 'unsubscribed' } }, UNSUBSCRIBED, now, prospect.closedAt);
    }
    return { sender: prospect.campaign.mailbox.address, done: true };
  });
}
