import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { accountSecondFactor, requireSecondFactor } from '../../../../core/src/second-factor';
import { secondFactorQuery, secondFactorRequirement } from '../../../../core/src/second-factor/schema';
import { resetSecondFactor } from '../../../../core/src/teams/users';
import { idParam, validate } from '../../../../core/src/validate';
import { changerOf } from '../../middleware/admin';
import { auditContext } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

/**
 * /admin/api/users/second-factor (docs/teams.md): whether an account requires a second factor and who has one; an
 * owner requires it; a user's lost factors are reset. Mounted before /users/:id.
 */
export function secondFactorRouter(db: Db): Router {
  const router = Router();
  router
    .route('/users/second-factor')
    .get(async (req, res) => {
      res.json({ ok: true, second_factor: await accountSecondFactor(db, validate(secondFactorQuery, req.query).account) });
    })
    .post(async (req, res) => {
      const input = validate(secondFactorRequirement, req.body);
      res.json({ ok: true, second_factor: await requireSecondFactor(db, input.account, input.required, auditContext(req, res, 'admin-api')) });
    })
    .all(methodNotAllowed);

  router
    .route('/users/:id/second-factor')
    .delete(async (req, res) => {
      res.json({ ok: true, factors: await resetSecondFactor(db, validate(idParam, req.params.id), changerOf(res), auditContext(req, res, 'admin-api')) });
    })
    .all(methodNotAllowed);
  return router;
}
