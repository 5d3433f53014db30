import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import { Conflict } from '../errors';

/** The statuses whose link is checked: agreed (waiting for the link) and placed (checking it stays). */
export const CHECKED_STATUSES = ['agreed', 'placed'] as const;

/**
 * The caller's `url` on POST /api/v1/prospects/state (docs/links.md): the page where the prospect put or will put the
 * link, given with `agreed` or alone on an agreed or placed prospect, in a links campaign (409 otherwise). A new page
 * forgets what was found on the old one and is checked at once; the same page again changes nothing.
 */
export function linkPageChange(campaign: Campaign, prospect: Prospect, statusAfter: ProspectStatus, url: string, now: Date): Partial<Prospect> {
  if (campaign.goal !== 'links') throw new Conflict(`url applies to links campaigns only; campaign ${campaign.id} is a ${campaign.goal} campaign`);
  if (!(CHECKED_STATUSES as readonly string[]).includes(statusAfter)) {
    throw new Conflict(`url applies to an agreed or placed prospect; this one is ${prospect.status}`);
  }
  if (prospect.linkUrl === url) return {};
  return { linkUrl: url, linkFound: false, linkHref: '', linkAnchor: '', linkRel: '', linkError: '', linkCheckedAt: null, linkMisses: 0, linkCheckAt: now };
}
