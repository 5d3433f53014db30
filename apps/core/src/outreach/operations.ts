import type { ApiKey } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { BadRequest, Forbidden } from '../errors';
import { checkLinkSoon } from '../links/schedule';
import { validate } from '../validate';
import type { Verifier, VerifyMode } from '../verify';
import { VerifiedBatch } from '../verify/batch';
import { keepVerifications } from '../verify/repository';
import { normaliseEmail } from './contacts';
import { listCampaigns } from './campaigns';
import { reportOutcome, type OutcomeReport } from './outcomes';
import { addProspects, lookupProspect, requireCampaign, type ProspectInput, type ProspectItem } from './prospects';
import { queueStepsSoon } from './scheduler';
import { addProspectsRequest, outcomeInput, prospectInput, prospectQuery } from './schema';

/**
 * The public API's campaign and prospect operations past authentication: validate the input, call the domain, give
 * the answer's body. The HTTP routes (apps/api/src/routes) and the MCP tools (apps/api/src/mcp) both call these.
 */

/** docs/api.md: campaign and prospect operations need "May add prospects to campaigns". */
export function requireProspects(key: ApiKey): void {
  if (!key.prospects) throw new Forbidden('this API key may not work with campaigns and prospects (it lacks the prospects permission)');
}

export async function listCampaignsOf(db: Db, key: ApiKey) {
  requireProspects(key);
  return { ok: true as const, campaigns: await listCampaigns(db, key.accountId) };
}

export async function addProspectsTo(db: Db, verifier: Verifier, key: ApiKey, body: unknown) {
  requireProspects(key);
  const input = validate<{ campaign: number; prospects: unknown[]; verify?: VerifyMode }>(addProspectsRequest, body);
  // each item alone: one bad item answers `invalid` with its reason, whatever else it carries (docs/outreach.md)
  let items = input.prospects.map((item): ProspectItem => {
    try {
      return validate<ProspectInput>(prospectInput, item);
    } catch (err) {
      if (!(err instanceof BadRequest)) throw err;
      return { refused: err.message, given: item };
    }
  });
  // docs/verification.md: the addresses verified before any is added (an unknown campaign is a 404 first); one blocked
  // becomes an invalid item, with the reasons as its error
  let verified: VerifiedBatch | null = null;
  if (input.verify) {
    await requireCampaign(db, key.accountId, input.campaign);
    verified = await VerifiedBatch.of(db, verifier, key.accountId, items.flatMap((item) => ('refused' in item ? [] : [normaliseEmail(item.email)].filter((e) => e !== null))));
    items = items.map((item) => {
      const email = 'refused' in item ? null : normaliseEmail(item.email);
      return email && verified!.blocks(input.verify, email) ? { refused: verified!.refusal(email), given: item } : item;
    });
  }
  const { answer, ready } = await addProspects(db, key.accountId, input.campaign, items);
  await queueStepsSoon(ready);
  if (verified) {
    await keepVerifications(db, { campaign: input.campaign }, verified.kept());
    answer.prospects = answer.prospects.map((p) => ({ ...p, verification: verified!.view(normaliseEmail(p.contact)) }));
  }
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
