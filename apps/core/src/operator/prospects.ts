import type { Tx } from '../db';
import { NotFound } from '../errors';
import { PAGE_SIZE, type Page } from '../keyset';
import { Joi, iso, validate } from '../validate';
import { prospectRows } from './repository';

export const PROSPECT_STATUSES = ['new', 'ready', 'writing', 'hold', 'later', 'replied', 'agreed', 'placed', 'lost'] as const;

export interface ProspectFilter {
  status?: string;
  step?: number;
  before?: number;
  limit?: number;
}

export const prospectFilter = Joi.object<ProspectFilter>({
  status: Joi.string().valid(...PROSPECT_STATUSES, ''),
  step: Joi.number().integer().min(0).max(100_000).empty(''),
  before: Joi.number().integer().positive().empty(''),
  limit: Joi.number().integer().min(1).max(500).default(PAGE_SIZE),
});

export interface ProspectLine {
  id: number;
  email: string | null;
  site: string | null;
  name: string;
  status: string;
  reason: string;
  step: number;
  stage: number;
  next_at: string | null;
  /** the prospect's last answer (its reply's first 300 characters) and when it came */
  last_answer: string;
  replied_at: string | null;
  updated_at: string;
  /** the last address verification asked for it (docs/verification.md); null when never */
  verification: { result: string; checked_at: string } | null;
}

/**
 * A campaign's prospects for its console page, newest first, filtered by status and step, a page at a time by keyset
 * (`before`: the `next` of the page before, a prospect id). One statement for a page with rows; an empty page asks
 * whether the campaign exists (404 when not). Not the campaign's detail: that counts its prospects, which on a
 * million of them took longer than the page itself (the growth bench's prospect lists, p99 230 to 330 ms).
 */
export async function browseProspects(db: Tx, campaign: number, input: unknown): Promise<Page<ProspectLine>> {
  const f = validate(prospectFilter, input ?? {}) as ProspectFilter & { limit: number };
  const rows = await prospectRows(db, { campaign, status: f.status || undefined, step: f.step, beforeId: f.before, limit: f.limit + 1 });
  if (!rows.length && !(await db.campaign.findUnique({ where: { id: campaign }, select: { id: true } }))) throw new NotFound(`no campaign with id ${campaign}`);
  const page = rows.slice(0, f.limit);
  return {
    rows: page.map((p) => ({
      id: p.id,
      email: p.email,
      site: p.site,
      name: p.name,
      status: p.status,
      reason: p.reason,
      step: p.step,
      stage: p.stage,
      next_at: iso(p.next_at),
      last_answer: p.reply,
      replied_at: iso(p.replied_at),
      updated_at: p.updated_at.toISOString(),
      verification: p.verification_result && p.verification_checked_at ? { result: p.verification_result, checked_at: p.verification_checked_at.toISOString() } : null,
    })),
    next: rows.length > f.limit && page.length ? String(page[page.length - 1]!.id) : null,
  };
}
