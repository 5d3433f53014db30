import type { Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';
import { Conflict, NotFound } from '../errors';
import { linkPageChange } from '../links/report';
import { updateProspect } from './changes';
import { ending, endSequences } from './end';
import { addToStopList } from '../stop-list/repository';
import { prospectView, requireCampaign, type ProspectView } from './prospects';
import { lockProspectByEmail } from './repository/prospects';

/**
 * Outcomes the caller reports (docs/api.md, POST /api/v1/prospects/state). Every check runs before any write, in one
 * transaction with the prospect row locked, so a refusal changes nothing.
 */
export const OUTCOME_STATES = ['replied', 'agreed', 'lost', 'stop'] as const;
export type OutcomeState = (typeof OUTCOME_STATES)[number];
export const LOST_REASONS = ['declined', 'price', 'timing', 'competitor', 'no_need', 'no_budget', 'other'] as const;
export type LostReason = (typeof LOST_REASONS)[number];

export interface OutcomeReport {
  campaign: number;
  email: string;
  state?: OutcomeState;
  reason?: LostReason;
  value?: number;
  /** links campaigns: the page where the prospect put (or will put) the link */
  url?: string;
}

/** Statuses in which the service may still write to the prospect. */
export const OPEN_STATUSES: ProspectStatus[] = ['new', 'ready', 'writing', 'hold', 'later'];

/** lost/no_reply is the service's own verdict: a late answer from the caller may still move the prospect on. */
const serviceClosed = (p: Prospect) => p.status === 'lost' && p.reason === 'no_reply';
const closedWhy = (p: Prospect) => (p.status === 'lost' ? `lost (${p.reason || 'no reason'})` : p.status);

type Change = Partial<Pick<Prospect, 'status' | 'reason' | 'reply' | 'repliedAt' | 'nextAt' | 'closedAt'>>;

/** What `state` does to `p` now: the changes, null for a no-op, or a Conflict. */
function transition(p: Prospect, state: OutcomeState, reason: LostReason | undefined, now: Date): Change | null {
  switch (state) {
    case 'replied':
      if (p.status === 'replied') return null;
      if (p.step === 0) throw new Conflict('replied does not apply: no step of the sequence has gone out to this prospect yet');
      if (!OPEN_STATUSES.includes(p.status) && !serviceClosed(p)) throw new Conflict(`replied does not apply: the prospect is already ${closedWhy(p)}`);
      return { status: 'replied', reason: '', reply: 'reported', repliedAt: now, nextAt: null, closedAt: null };
    case 'agreed':
      if (p.status === 'agreed') return null;
      if (p.status === 'placed') throw new Conflict('agreed does not apply: the prospect is already placed');
      if (p.status === 'lost' && !serviceClosed(p)) throw new Conflict(`agreed does not apply: the prospect is already ${closedWhy(p)}`);
      return ending({ status: 'agreed' }, now);
    case 'lost':
      if (p.status === 'lost' && !serviceClosed(p)) return null;
      if (p.status === 'agreed' || p.status === 'placed') throw new Conflict(`lost does not apply: the prospect is already ${p.status} (won)`);
      return ending({ status: 'lost', reason: reason! }, now);
    case 'stop':
      if (p.status === 'lost' && p.reason === 'stopped') return null;
      // docs/outreach.md: stop closes the prospect as lost/stopped whatever it was, a won one included
      return ending({ status: 'lost', reason: 'stopped' }, now, p.closedAt);
  }
}

async function lockProspect(tx: Tx, campaignId: number, email: string): Promise<Prospect> {
  const id = await lockProspectByEmail(tx, campaignId, email);
  if (id === undefined) throw new NotFound(`no prospect ${email} in campaign ${campaignId}`);
  return tx.prospect.findUniqueOrThrow({ where: { id } });
}

export async function reportOutcome(db: Db, accountId: number, report: OutcomeReport): Promise<ProspectView> {
  return db.$transaction(
    async (tx) => {
      const campaign = await requireCampaign(tx, accountId, report.campaign);
      const email = report.email.trim().toLowerCase();
      const prospect = await lockProspect(tx, campaign.id, email);
      const now = new Date();
      const change: Record<string, unknown> = report.state ? { ...(transition(prospect, report.state, report.reason, now) ?? {}) } : {};
      if (report.value !== undefined) change.value = report.value;
      if (report.url !== undefined) Object.assign(change, linkPageChange(campaign, prospect, (change.status as ProspectStatus | undefined) ?? prospect.status, report.url, now));
      if (report.state === 'stop') {
        await addToStopList(tx, accountId, email);
        // never written to again by any campaign of the account: close its open prospects everywhere
        await endSequences(tx, { email, id: { not: prospect.id }, status: { in: OPEN_STATUSES }, campaign: { accountId } }, { status: 'lost', reason: 'stopped' }, now);
      }
      const after = Object.keys(change).length ? await updateProspect(tx, campaign, prospect.status, prospect.id, change) : prospect;
      return prospectView(after, campaign);
    },
    { timeout: 15_000, maxWait: 10_000 },
  );
}
