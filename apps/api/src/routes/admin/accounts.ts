import { Router } from 'express';
import { accountInput } from '../../../../core/src/accounts/schema';
import { createAccountAudited, listAccounts } from '../../../../core/src/accounts';
import type { Db } from '../../../../core/src/db';
import { validate } from '../../../../core/src/validate';
import { scopeOf } from '../../middleware/admin';
import { auditContext } from '../../middleware/audit';
import { methodNotAllowed } from '../../middleware/errors';

/** /admin/api/accounts (docs/api.md): create one, list them. */
export function accountsRouter(db: Db): Router {
  const router = Router();
  router
    .route('/accounts')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, account: await createAccountAudited(db, validate(accountInput, req.body), auditContext(req, res, 'admin-api')) });
    })
    .get(async (_req, res) => {
      res.json({ ok: true, accounts: await listAccounts(db, scopeOf(res)) });
    })
    .all(methodNotAllowed);
  return router;
}
