import type { Campaign, Prospect } from '../../../../generated/prisma/client';
import type { ProspectStatus } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';
import { NotFound } from '../errors';
import { updateProspect } from './changes';
import { ending } from './end';
import { loadStopList } from '../stop-list/repository';
import { normaliseEmail, normaliseSite } from './contacts';
import type { DueStep } from './scheduler';
import { insertProspects, lockAccountCampaign, lockCampaignForAdds, prospectsMatching, reserveProspectIds, type KnownRow } from './repository/prospects';
import { planSteps, type PlannedStep } from './repository/held';
import { replanHeldSteps } from './replan';
import { firstStepAt } from './timing';
import { scheduleOf, windowedAt } from './windows';

import { prospectView, type ProspectView } from './view';
export { prospectView, type LinkView, type ProspectView } from './view';

/** The account's campaign, or 404 (another account's campaign is as unknown as a missing one). `lock` serialises writers. */
export async function requireCampaign(db: Tx, accountId: number, campaignId: number, lock = false): Promise<Campaign> {
  if (lock) await lockAccountCampaign(db, accountId, campaignId);
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

/** An item of the request that failed its own check: answered `invalid` with `refused` as its error. */
export interface RefusedItem {
  refused: string;
  given: unknown;
}

export type ProspectItem = ProspectInput | RefusedItem;

const isRefused = (item: ProspectItem): item is RefusedItem => 'refused' in item;

/** What an item was given as its contact: the email, else the site, else "". */
function givenContact(item: unknown): string {
  const { email, site } = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  return String((typeof email === 'string' && email) || (typeof site === 'string' && site) || '');
}

export type AddResult = 'added' | 'updated' | 'same' | 'stopped' | 'invalid';

export interface AddAnswer {
  campaign: number;
  added: number;
  updated: number;
  same: number;
  stopped: number;
  invalid: number;
  /** `error` says why an item is `invalid` */
  prospects: { contact: string; result: AddResult; id: number | null; error?: string; verification?: { result: string; checked_at: string } | null }[];
}

/** Where a prospect starts: ready (email, running campaign), hold (site only, running), new otherwise. */
function startingState(campaign: Pick<Campaign, 'status' | 'schedule'>, hasEmail: boolean, fields: unknown, firstDelayHours: number | null, now: Date): { status: ProspectStatus; nextAt: Date | null } {
  if (campaign.status !== 'running' || firstDelayHours === null) return { status: 'new', nextAt: null };
  if (!hasEmail) return { status: 'hold', nextAt: null };
  // at its sending window's opening (in the prospect's zone), so the scheduler does not claim it while the window is shut
  return { status: 'ready', nextAt: windowedAt(scheduleOf(campaign.schedule), fields, firstStepAt(now, firstDelayHours)) };
}

const OPEN: ProspectStatus[] = ['new', 'ready', 'writing', 'hold', 'later'];

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The campaign's prospects an add request can meet, read once, then kept current as the request creates and changes
 * rows: the same matching as findProspect, without a query per item.
 */
class KnownProspects {
  constructor(private readonly rows: KnownRow[]) {}

  static async load(tx: Tx, campaignId: number, emails: string[], sites: string[]): Promise<KnownProspects> {
    if (!emails.length && !sites.length) return new KnownProspects([]);
    const rows = await prospectsMatching(tx, campaignId, emails, sites);
    return new KnownProspects(rows);
  }

  /** By email, else by site: a site-only prospect first, then by email descending, then the oldest. */
  find(contact: { email: string | null; site: string | null }): KnownRow | null {
    if (contact.email) return this.rows.find((p) => p.email === contact.email) ?? null;
    if (!contact.site) return null;
    const bySite = this.rows.filter((p) => p.site === contact.site);
    bySite.sort((a, b) => (a.email === b.email ? 0 : a.email === null ? -1 : b.email === null ? 1 : a.email < b.email ? 1 : -1) || a.id - b.id);
    return bySite[0] ?? null;
  }

  /** The oldest site-only prospect of a site, which an address of that site completes. */
  siteOnly(site: string): KnownRow | null {
    return this.rows.filter((p) => p.site === site && p.email === null).sort((a, b) => a.id - b.id)[0] ?? null;
  }

  add(prospect: KnownRow): void {
    this.rows.push(prospect);
  }
}

/**
 * The rows a request creates, written together at its end in one statement rather than one INSERT per item (the
 * per-item writes were most of the request's cost: bench/README.md). Ids are taken from the sequence up front, so each
 * answer, scheduled step and later item of the request can name its row at once; a later item of the same request
 * changes a row still to be written in memory.
 */
class NewProspects {
  private readonly rows = new Map<number, KnownRow>();

  private constructor(private readonly ids: number[]) {}

  static async reserve(tx: Tx, count: number): Promise<NewProspects> {
    return new NewProspects(await reserveProspectIds(tx, count));
  }

  /** A row to write; the columns it does not name take their defaults from the table. */
  create(data: Omit<KnownRow, 'id' | 'fields'> & { fields: object }): KnownRow {
    const id = this.ids.shift();
    if (id === undefined) throw new Error('more prospects created than reserved');
    const row: KnownRow = { id, ...data, fields: data.fields as Prospect['fields'] };
    this.rows.set(id, row);
    return row;
  }

  has(prospect: KnownRow): boolean {
    return this.rows.has(prospect.id);
  }

  /** One INSERT of every row, its columns as arrays (Prisma's createMany cost about 0.4 ms a row to build: bench/README.md). */
  async write(tx: Tx): Promise<void> {
    const rows = [...this.rows.values()];
    if (!rows.length) return;
    await insertProspects(tx, rows);
  }
}

/**
 * POST /api/v1/prospects, in one transaction. The campaign row is locked first, so concurrent adds to one campaign
 * take turns and the same address can never be added twice. Items are handled in input order; a duplicate inside one
 * request meets the row its first occurrence made (same, or updated when it brings a new name or fields).
 */
export async function addProspects(db: Db, accountId: number, campaignId: number, given: ProspectItem[]): Promise<{ answer: AddAnswer; ready: DueStep[] }> {
  return db.$transaction(
    async (tx) => {
      const campaign = await lockCampaignForAdds(tx, accountId, campaignId);
      if (!campaign) throw new NotFound(`no campaign with id ${campaignId}`);
      const first = campaign.firstDelayHours === null ? null : { delayHours: campaign.firstDelayHours };
      const answer: AddAnswer = { campaign: campaignId, added: 0, updated: 0, same: 0, stopped: 0, invalid: 0, prospects: [] };
      const now = new Date();
      /** prospects whose step 1 is now scheduled: the caller queues their jobs after the commit */
      const ready: DueStep[] = [];
      /** steps scheduled by this request, with when they were due; prospects whose time zone changed */
      const planned: PlannedStep[] = [];
      const zoneChanged: number[] = [];
      const items = given.map((item) => (isRefused(item) ? {} : item));
      const contacts = items.map((item) => ({ email: normaliseEmail(item.email), site: normaliseSite(item.site) }));
      const known = await KnownProspects.load(
        tx,
        campaignId,
        contacts.flatMap((c) => (c.email ? [c.email] : [])),
        contacts.flatMap((c) => (c.site ? [c.site] : [])),
      );
      const stopList = await loadStopList(tx, accountId, contacts);
      const created = await NewProspects.reserve(tx, items.length);
      /** a row of this request is changed in memory before its one write; a stored row, now */
      const change = async (prospect: KnownRow, changes: Record<string, unknown>) => {
        if (created.has(prospect)) Object.assign(prospect, changes);
        else Object.assign(prospect, await updateProspect(tx, campaign, prospect.status, prospect.id, changes));
      };
      for (const [i, item] of items.entries()) {
        const { email, site } = contacts[i]!;
        const checked = given[i]!;
        if (isRefused(checked) || (!email && !site)) {
          answer.invalid++;
          const error = isRefused(checked) ? checked.refused : 'neither a valid address nor a site';
          answer.prospects.push({ contact: givenContact(isRefused(checked) ? checked.given : checked), result: 'invalid', id: null, error });
          continue;
        }
        const contact = email ?? site!;
        let existing = known.find({ email, site: email ? null : site });
        const name = item.name?.trim() ?? '';
        const fields = item.fields ?? {};

        if (stopList.covers({ email, site })) {
          const stopped = ending({ status: 'lost', reason: 'stopped' }, now);
          let id: number;
          if (!existing) {
            const row = created.create({ campaignId, email, site, name, fields, ...stopped });
            known.add(row);
            id = row.id;
          } else {
            id = existing.id;
            if (OPEN.includes(existing.status)) await change(existing, stopped);
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
          const start = startingState(campaign, email !== null, fields, first ? first.delayHours : null, now);
          const row = created.create({ campaignId, email, site, name, fields, reason: '', closedAt: null, ...start });
          known.add(row);
          if (start.status === 'ready') {
            ready.push({ prospectId: row.id, step: 1, nextAt: start.nextAt });
            planned.push({ id: row.id, due: firstStepAt(now, first!.delayHours), nextAt: start.nextAt! });
          }
          answer.added++;
          answer.prospects.push({ contact, result: 'added', id: row.id });
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
            changes.nextAt = windowedAt(scheduleOf(campaign.schedule), mergedFields, firstStepAt(now, first.delayHours));
            ready.push({ prospectId: existing.id, step: 1, nextAt: changes.nextAt as Date });
            planned.push({ id: existing.id, due: firstStepAt(now, first.delayHours), nextAt: changes.nextAt as Date });
          }
        }
        // a stored prospect's time zone changed: a step of theirs held by the window is planned again (replan.ts)
        const zone = (f: unknown) => (f as Record<string, unknown> | null)?.timezone;
        if (changes.fields && !created.has(existing) && zone(mergedFields) !== zone(existing.fields)) zoneChanged.push(existing.id);
        const changed = Object.keys(changes).length > 0;
        if (changed) await change(existing, changes);
        answer[changed ? 'updated' : 'same']++;
        answer.prospects.push({ contact, result: changed ? 'updated' : 'same', id: existing.id });
      }
      await created.write(tx);
      // steps put at their window's opening keep when they were due, for a later change of the window (replan.ts)
      await planSteps(tx, planned.filter((p) => p.nextAt.getTime() > p.due.getTime()));
      if (zoneChanged.length) await replanHeldSteps(tx, { prospectIds: zoneChanged }, now);
      return { answer, ready };
    },
    { timeout: 20_000, maxWait: 10_000 },
  );
}
