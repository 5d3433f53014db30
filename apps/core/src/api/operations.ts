import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { BadRequest, Forbidden } from '../errors';
import { checkLinkSoon } from '../links/schedule';
import { reportOutcome, type OutcomeReport } from '../outreach/outcomes';
import { addProspects, lookupProspect, type ProspectInput, type ProspectItem } from '../outreach/prospects';
import { queueStepsSoon } from '../outreach/scheduler';
import { addProspectsRequest, outcomeInput, prospectInput, prospectQuery } from '../outreach/schemas';
import { listCampaigns } from '../services/campaigns';
import { listLists } from '../services/lists';
import { addSubscriberByKey, removeSubscriber, requireAccountList, subscriberInput, unsubscribeInput } from '../subscribers';
import { validate } from '../validate';

/**
 * The public API's operations past authentication: validate the input, call the domain, give the answer's body. The HTTP
 * routes (apps/api/src/routes) and the MCP tools (apps/api/src/mcp) both call these, so every rule has one copy.
 * Sending is `acceptSend`/`findSend` (sending/accept.ts), which both call directly.
 */

/** docs/api.md: campaign and prospect operations need "May add prospects to campaigns". */
export function requireProspects(key: ApiKey): void {
  if (!key.prospects) throw new Forbidden('this API key may not work with campaigns and prospects (it lacks the prospects permission)');
}

export async function listListsOf(db: Db, key: ApiKey) {
  return { ok: true as const, lists: await listLists(db, key.accountId) };
}

export async function subscribe(db: Db, key: ApiKey, body: unknown) {
  const { list: listKey, ...person } = validate(subscriberInput, body ?? {});
  return { ok: true as const, status: await addSubscriberByKey(db, key.accountId, listKey, person) };
}

export async function unsubscribe(db: Db, key: ApiKey, body: unknown) {
  const { list: listKey, email } = validate(unsubscribeInput, body);
  const list = await requireAccountList(db, key.accountId, listKey);
  return { ok: true as const, status: await removeSubscriber(db, list, email) };
}

export async function listCampaignsOf(db: Db, key: ApiKey) {
  requireProspects(key);
  return { ok: true as const, campaigns: await listCampaigns(db, key.accountId) };
}

export async function addProspectsTo(db: Db, key: ApiKey, body: unknown) {
  requireProspects(key);
  const input = validate<{ campaign: number; prospects: unknown[] }>(addProspectsRequest, body);
  // each item alone: one bad item answers `invalid` with its reason, whatever else it carries (docs/outreach.md)
  const items = input.prospects.map((item): ProspectItem => {
    try {
      return validate<ProspectInput>(prospectInput, item);
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      return { refused: err.message, given: item };
    }
  });
  const { answer, ready } = await addProspects(db, key.accountId, input.campaign, items);
  await queueStepsSoon(ready);
  return { ok: true as const, ...answer };
}

export async function findProspect(db: Db, key: ApiKey, query: unknown) {
  requireProspects(key);
  const input = validate<{ campaign: number; email?: string; site?: string }>(prospectQuery, query);
  return { ok: true as const, prospect: await lookupProspect(db, key.accountId, input) };
}

export async function reportProspectState(db: Db, key: ApiKey, body: unknown) {
  requireProspects(key);
  const report = validate<OutcomeReport>(outcomeInput, body);
  const prospect = await reportOutcome(db, key.accountId, report);
  // a page where the link is (or will be): checked at once, then on the re-check schedule (docs/links.md)
  if (report.url !== undefined) await checkLinkSoon(db, prospect.id);
  return { ok: true as const, prospect };
}
