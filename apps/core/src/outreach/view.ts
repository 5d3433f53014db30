import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import { iso } from '../validate';

/** Every status of a prospect (docs/api.md), in the order of the sequence. */
export const PROSPECT_STATUSES = ['new', 'ready', 'writing', 'hold', 'later', 'replied', 'agreed', 'placed', 'lost'] as const;

/** The Prospect of docs/api.md: every string a string, `value` a number, timestamps ISO 8601 UTC or null. */
export interface ProspectView {
  id: number;
  email: string;
  name: string;
  site: string;
  status: string;
  reason: string;
  step: number;
  /** its place in the sequence (branches.ts): the id of the step it waits at, "$end" past its path's last step; null before its first step went out */
  at: string | null;
  stage: number;
  stage_name: string;
  value: number;
  reply: string;
  replied_at: string | null;
  next_at: string | null;
  closed_at: string | null;
  /** links campaigns (docs/links.md): the page the prospect gave and what its last check found; null without a page */
  link: LinkView | null;
  /** the last address verification asked for it (docs/verification.md); null: never verified */
  verification: { result: string; checked_at: string } | null;
}

export interface LinkView {
  url: string;
  found: boolean;
  href: string;
  anchor: string;
  rel: string;
  /** why the last check did not find the link ("" when it did, or before the first check) */
  error: string;
  checked_at: string | null;
}

const linkView = (p: Prospect): LinkView | null =>
  p.linkUrl === null
    ? null
    : { url: p.linkUrl, found: p.linkFound, href: p.linkHref, anchor: p.linkAnchor, rel: p.linkRel, error: p.linkError, checked_at: iso(p.linkCheckedAt) };

export function prospectView(p: Prospect, campaign: Pick<Campaign, 'stages'>): ProspectView {
  return {
    id: p.id,
    email: p.email ?? '',
    name: p.name,
    site: p.site ?? '',
    status: p.status,
    reason: p.reason,
    step: p.step,
    at: p.node,
    stage: p.stage,
    stage_name: campaign.stages[p.stage] ?? '',
    value: p.value,
    reply: p.reply,
    replied_at: iso(p.repliedAt),
    next_at: iso(p.nextAt),
    closed_at: iso(p.closedAt),
    link: linkView(p),
    verification: p.verificationResult && p.verificationCheckedAt ? { result: p.verificationResult, checked_at: p.verificationCheckedAt.toISOString() } : null,
  };
}
