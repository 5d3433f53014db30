import type { Router } from 'express';
import type { Db } from '../../../core/src/db';
import type { Verifier } from '../../../core/src/verify';
import { verifyAddress, verifyAddresses } from '../../../core/src/verify/operations';
import { methodNotAllowed } from '../middleware/errors';

/** docs/api.md, docs/verification.md: verify up to 100 addresses, or one by query. */
export function verifyRoutes(router: Router, db: Db, verifier: Verifier): void {
  router
    .route('/verify')
    .post(async (req, res) => {
      res.json(await verifyAddresses(db, verifier, res.locals.key, req.body));
    })
    .get(async (req, res) => {
      res.json(await verifyAddress(db, verifier, res.locals.key, req.query));
    })
    .all(methodNotAllowed);
}
