import type { Prospect } from '../../../../generated/prisma/client';
import { config } from '../config';
import type { Db } from '../db';
import { emitEvent } from '../events/index';
import { FETCH_LIMITS, fetchPage, FetchFailed, type FetchLimits } from '../links/fetch';
import { findLink, type FoundLink } from '../links/find';
import { CHECKED_STATUSES } from '../links/report';
import { lockProspect } from '../links/repository';
import { emitProspectChange } from './changes';
import { prospectView } from './prospects';

/** A placed link missing this many checks in a row moves the prospect back to agreed. */
export const MISSES_TO_LOSE = 2;

export const recheckDelayMs = () => config().linkRecheckHours * 3600 * 1000;
export const defaultFetchLimits = (): FetchLimits => ({ ...FETCH_LIMITS, allowPrivate: config().allowPrivateFetch });

export type CheckOutcome = 'skipped' | 'placed' | 'found' | 'missing' | 'lost';

/** Fetches the page and looks for the target; a failed fetch is a result (its error kept), not an exception. */
async function inspect(pageUrl: string, targetUrl: string | null, limits: FetchLimits): Promise<{ link: FoundLink | null; error: string }> {
  if (!targetUrl) return { link: null, error: 'the campaign has no target URL to look for' };
  try {
    const page = await fetchPage(pageUrl, limits);
    const link = findLink(page.html, page.url, targetUrl);
    return { link, error: link ? '' : `no link to ${targetUrl} on the page` };
  } catch (err) {
    if (err instanceof FetchFailed) return { link: null, error: err.message };
    throw err;
  }
}

/**
 * One check of one prospect's page (the `links` job). The fetch runs outside any transaction; the result is written
 * with the row locked and re-read, so a report from the caller in the meantime (another url, lost, stop) wins.
 * Found on an agreed prospect: placed, `link.placed`. Missing on a placed one: a miss; the second miss in a row moves it
 * back to agreed with reason `link_removed`, `link.lost`. Every check sets `checked_at` and keeps its error.
 */
export async function checkProspectLink(db: Db, prospectId: number, limits: FetchLimits = defaultFetchLimits()): Promise<CheckOutcome> {
  const before = await db.prospect.findUnique({ where: { id: prospectId }, include: { campaign: true } });
  if (!before?.linkUrl || !(CHECKED_STATUSES as readonly string[]).includes(before.status)) return 'skipped';
  const { link, error } = await inspect(before.linkUrl, before.campaign.targetUrl, limits);

  return db.$transaction(async (tx) => {
    const p = await lockProspect(tx, prospectId);
    if (!p || p.linkUrl !== before.linkUrl || !(CHECKED_STATUSES as readonly string[]).includes(p.status)) return 'skipped';
    const now = new Date();
    const misses = link ? 0 : p.status === 'placed' ? p.linkMisses + 1 : 0;
    let outcome: CheckOutcome = link ? 'found' : 'missing';
    const change: Partial<Pick<Prospect, 'status' | 'reason'>> = {};
    if (link && p.status === 'agreed') {
      outcome = 'placed';
      Object.assign(change, { status: 'placed', reason: '' });
    } else if (!link && misses >= MISSES_TO_LOSE) {
      outcome = 'lost';
      Object.assign(change, { status: 'agreed', reason: 'link_removed' });
    }
    const after = await tx.prospect.update({
      where: { id: p.id },
      data: {
        ...change,
        linkFound: Boolean(link),
        // a missing link keeps what was last found, so `link_removed` still says which link went away
        ...(link ? { linkHref: link.href, linkAnchor: link.anchor, linkRel: link.rel } : {}),
        linkError: error,
        linkCheckedAt: now,
        linkMisses: outcome === 'lost' ? 0 : misses,
        linkCheckAt: new Date(now.getTime() + recheckDelayMs()),
      },
    });
    if (outcome === 'placed' || outcome === 'lost') {
      const data = { ...prospectView(after, p.campaign), campaign: p.campaign.id };
      await emitEvent(tx, p.campaign.accountId, outcome === 'placed' ? 'link.placed' : 'link.lost', data);
      await emitProspectChange(tx, p.campaign, p.status, after);
    }
    return outcome;
  }, { timeout: 15_000, maxWait: 10_000 });
}
