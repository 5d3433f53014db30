import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { reportOutcome, type OutcomeReport } from '../../../core/src/outreach/outcomes';
import { addProspects, lookupProspect, type ProspectInput } from '../../../core/src/outreach/prospects';
import { queueStepsSoon } from '../../../core/src/outreach/scheduler';
import { checkLinkSoon } from '../../../core/src/links/schedule';
import { addProspectsInput, outcomeInput, prospectQuery } from '../../../core/src/outreach/schemas';
import { validate } from '../../../core/src/validate';
import { methodNotAllowed } from '../middleware/errors';
import { idempotent } from '../middleware/idempotency';

/** Spec 4.6-4.8 (the prospects permission is checked in v1.ts). Answers 200, never 201. */
export function prospectsRoutes(router: Router, db: Db): void {
  router
    .route('/prospects')
    .post(idempotent(db, 'POST /prospects'), async (req, res) => {
      const input = validate<{ campaign: number; prospects: ProspectInput[] }>(addProspectsInput, req.body);
      const { answer, ready } = await addProspects(db, res.locals.key.accountId, input.campaign, input.prospects);
      await queueStepsSoon(ready);
      res.json({ ok: true, ...answer });
    })
    .get(async (req, res) => {
      const query = validate<{ campaign: number; email?: string; site?: string }>(prospectQuery, req.query);
      res.json({ ok: true, prospect: await lookupProspect(db, res.locals.key.accountId, query) });
    })
    .all(methodNotAllowed);

  router
    .route('/prospects/state')
    .post(idempotent(db, 'POST /prospects/state'), async (req, res) => {
      const report = validate<OutcomeReport>(outcomeInput, req.body);
      const prospect = await reportOutcome(db, res.locals.key.accountId, report);
      if (report.url !== undefined) await checkLinkSoon(db, prospect.id);
      res.json({ ok: true, prospect });
    })
    .all(methodNotAllowed);
}
