import type { Router } from 'express';
import { addProspectsTo, findProspect, reportProspectState } from '../../../core/src/outreach/operations';
import type { Db } from '../../../core/src/db';
import type { Verifier } from '../../../core/src/verify';
import { methodNotAllowed } from '../middleware/errors';
import { idempotent } from '../middleware/idempotency';

/** docs/api.md (the prospects permission is checked in v1.ts). Answers 200, never 201. */
export function prospectsRoutes(router: Router, db: Db, verifier: Verifier): void {
  router
    .route('/prospects')
    .post(idempotent(db, 'POST /prospects'), async (req, res) => {
      res.json(await addProspectsTo(db, verifier, res.locals.key, req.body));
    })
    .get(async (req, res) => {
      res.json(await findProspect(db, res.locals.key, req.query));
    })
    .all(methodNotAllowed);

  router
    .route('/prospects/state')
    .post(idempotent(db, 'POST /prospects/state'), async (req, res) => {
      res.json(await reportProspectState(db, res.locals.key, req.body));
    })
    .all(methodNotAllowed);
}
