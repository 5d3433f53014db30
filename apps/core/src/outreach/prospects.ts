import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';
import { NotFound } from '../errors';
import { iso } from '../validate';
import { updateProspect } from './changes';
import { loadStopList, normaliseEmail, normaliseSite } from './contacts';
import type { DueStep } from './scheduler';
import { firstStepAt } from './timing';

/** The Prospect of spec 2.4: every string a string, `value` a number, timestamps ISO 8601 UTC or null. */
export interface ProspectView {
  id: number;
  email: string;
  name: string;
  site: string;
  status: string;
  reason: string;
  step: number;
  stage: number;
  stage_name: string;
  value: number;
  reply: string;
  replied_at: string | null;
  next_at: string | null;
  closed_at: string | null;
}

export function prospectView(p: Prospect, campaign: Pick<Campaign, 'stages'>): ProspectView {
  return {
    id: p.id,
    email: p.email ?? '',
    name: p.name,
    site: p.site ?? '',
    status: p.status,
    reason: p.reason,
    step: p.step,
    stage: p.stage,
    stage_name: campaign.stages[p.stage] ?? '',
    value: p.value,
    reply: p.reply,
    replied_at: iso(p.repliedAt),
    next_at: iso(p.nextAt),
    closed_at: iso(p.closedAt),
  };
}

/** The account's campaign, or 404 (another account's campaign is as unknown as a missing one). `lock` serialises writers. */
export async function requireCampaign(db: Tx, accountId: number, campaignId: number, lock = false): Promise<Campaign> {
  if (lock) await db.$queryRaw`SELECT id FROM campaigns WHERE id = ${campaignId} AND account_id = ${accountId} FOR UPDATE`;
  const campaign = await db.campaign.findFirst({ where: { id: campaignId, accountId } });
  if (!campaign) throw new NotFound(`no campaign with id ${campaignId}`);
  return campaign;
}

/** By lower-cased email, else by site host (a site-only prospect first). */
export async function findProspect(db: Tx, campaignId: number, contact: { email?: string | null; site?: string | null }): Promise<Prospect | null> {
  if (contact.email) return db.prospect.findUnique({ where: { campaignId_email: { campaignId, email: contact.email } } });
  if (contact.site) {
    return db.prospect.findFirst({ where: { campaignId, site: contact.site }, orderBy: [{ email: { sort: 'desc', nulls: 'first' } }, { id: 'asc' }] });
  }
  return null;
}

export async function lookupProspect(db: Tx, accountId: number, query: { campaign: number; email?: string; site?: string }): Promise<ProspectView> {
  const campaign = await requireCampaign(db, accountId, query.campaign);
  const email = query.email !== undefined ? query.email.trim().toLowerCase() : null;
  const site = email === null ? normaliseSite(query.site) : null;
  const prospect = await findProspect(db, campaign.id, { email, site });
  if (!prospect) throw new NotFound(`no prospect ${email ?? query.site} in campaign ${campaign.id}`);
  return prospectView(prospect, campaign);
}

export interface ProspectInput {
  email?: string | null;
  site?: string | null;
  name?: string;
  fields?: Record<string, unknown>;
}

export type AddResult = 'added' | 'updated' | 'same' | 'stopped' | 'invalid';

export interface AddAnswer {
  campaign: number;
  added: number;
  updated: number;
  same: number;
  stopped: number;
  invalid: number;
  prospects: { contact: string; result: AddResult; id: number | null }[];
}

/** Where a prospect starts: ready (email, running campaign), hold (site only, running), new otherwise. */
function startingState(campaign: Campaign, hasEmail: boolean, firstDelayHours: number | null, now: Date): { status: ProspectStatus; nextAt: Date | null } {
  if (campaign.status !== 'running' || firstDelayHours === null) return { status: 'new', nextAt: null };
  if (!hasEmail) return { status: 'hold', nextAt: null };
  return { status: 'ready', nextAt: firstStepAt(now, firstDelayHours) };
}

const OPEN: ProspectStatus[] = ['new', 'ready', 'writing', 'hold', 'later'];

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The campaign's prospects an add request can meet, read once, then kept current as the request creates and changes
 * rows: the same matching as findProspect, without a query per item.
 */
class KnownProspects {
  constructor(private readonly rows: Prospect[]) {}

  static async load(tx: Tx, campaignId: number, emails: string[], sites: string[]): Promise<KnownProspects> {
    if (!emails.length && !sites.length) return new KnownProspects([]);
    return new KnownProspects(await tx.prospect.findMany({ where: { campaignId, OR: [{ email: { in: emails } }, { site: { in: sites } }] } }));
  }

  /** By email, else by site: a site-only prospect first, then by email descending, then the oldest. */
  find(contact: { email: string | null; site: string | null }): Prospect | null {
    if (contact.email) return this.rows.find((p) => p.email === contact.email) ?? null;
    if (!contact.site) return null;
    const bySite = this.rows.filter((p) => p.site === contact.site);
    bySite.sort((a, b) => (a.email === b.email ? 0 : a.email === null ? -1 : b.email === null ? 1 : a.email < b.email ? 1 : -1) || a.id - b.id);
    return bySite[0] ?? null;
  }

  /** The oldest site-only prospect of a site, which an address of that site completes. */
  siteOnly(site: string): Prospect | null {
    return this.rows.filter((p) => p.site === site && p.email === null).sort((a, b) => a.id - b.id)[0] ?? null;
  }

  add(prospect: Prospect): void {
    this.rows.push(prospect);
  }
}

/**
 * POST /api/v1/prospects, in one transaction. The campaign row is locked first, so concurrent adds to one campaign
 * take turns and the same address can never be added twice. Items are handled in input order; a duplicate inside one
 * request meets the row its first occurrence made (same, or updated when it brings a new name or fields).
 */
export async function addProspects(db: Db, accountId: number, campaignId: number, items: ProspectInput[]): Promise<{ answer: AddAnswer; ready: DueStep[] }> {
  return db.$transaction(
    async (tx) => {
      const campaign = await requireCampaign(tx, accountId, campaignId, true);
      const first = await tx.campaignStep.findFirst({ where: { campaignId }, orderBy: { position: 'asc' } });
      const answer: AddAnswer = { campaign: campaignId, added: 0, updated: 0, same: 0, stopped: 0, invalid: 0, prospects: [] };
      const now = new Date();
      /** prospects whose step 1 is now scheduled: the caller queues their jobs after the commit */
      const ready: DueStep[] = [];
      const contacts = items.map((item) => ({ email: normaliseEmail(item.email), site: normaliseSite(item.site) }));
      const known = await KnownProspects.load(
        tx,
        campaignId,
        contacts.flatMap((c) => (c.email ? [c.email] : [])),
        contacts.flatMap((c) => (c.site ? [c.site] : [])),
      );
      const stopList = await loadStopList(tx, accountId, contacts);
      for (const [i, item] of items.entries()) {
        const { email, site } = contacts[i]!;
        if (!email && !site) {
          answer.invalid++;
          answer.prospects.push({ contact: String(item.email || item.site || ''), result: 'invalid', id: null });
          continue;
        }
        const contact = email ?? site!;
        let existing = known.find({ email, site: email ? null : site });
        const name = item.name?.trim() ?? '';
        const fields = item.fields ?? {};

        if (stopList.covers({ email, site })) {
          const stopped = { status: 'lost' as const, reason: 'stopped', nextAt: null, closedAt: now };
          let id: number;
          if (!existing) {
            const created = await tx.prospect.create({ data: { campaignId, email, site, name, fields: fields as object, ...stopped } });
            known.add(created);
            id = created.id;
          } else {
            id = existing.id;
            if (OPEN.includes(existing.status)) Object.assign(existing, await updateProspect(tx, campaign, existing.status, id, stopped));
          }
          answer.stopped++;
          answer.prospects.push({ contact, result: 'stopped', id });
          continue;
        }

        // an address not yet in the campaign may complete a site-only prospect of the same site
        if (!existing && email && site) {
          existing = known.siteOnly(site);
        }
        if (!existing) {
          const start = startingState(campaign, email !== null, first ? first.delayHours : null, now);
          const created = await tx.prospect.create({ data: { campaignId, email, site, name, fields: fields as object, ...start } });
          known.add(created);
          if (start.status === 'ready') ready.push({ prospectId: created.id, step: 1, nextAt: start.nextAt });
          answer.added++;
          answer.prospects.push({ contact, result: 'added', id: created.id });
          continue;
        }

        const mergedFields = { ...(existing.fields as Record<string, unknown>), ...fields };
        const changes: Record<string, unknown> = {};
        if (name && name !== existing.name) changes.name = name;
        if (!sameJson(mergedFields, existing.fields)) changes.fields = mergedFields;
        if (site && !existing.site) changes.site = site;
        if (email && !existing.email) {
          changes.email = email;
          // a site-only prospect waiting in hold gets its address: the sequence can start
          if (existing.status === 'hold' && campaign.status === 'running' && first) {
            changes.status = 'ready';
            changes.nextAt = firstStepAt(now, first.delayHours);
            ready.push({ prospectId: existing.id, step: 1, nextAt: changes.nextAt as Date });
          }
        }
        const changed = Object.keys(changes).length > 0;
        if (changed) Object.assign(existing, await updateProspect(tx, campaign, existing.status, existing.id, changes));
        answer[changed ? 'updated' : 'same']++;
        answer.prospects.push({ contact, result: changed ? 'updated' : 'same', id: existing.id });
      }
      return { answer, ready };
    },
    { timeout: 20_000, maxWait: 10_000 },
  );
}
