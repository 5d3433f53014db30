import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { changeRole, createUser, listUsers, removeUser, signOutUser } from '../../../../core/src/teams';
import { userChange, userInput, usersQuery } from '../../../../core/src/teams/schema';
import { idParam, validate } from '../../../../core/src/validate';
import { methodNotAllowed } from '../../middleware/errors';
import { changerOf } from '../../middleware/admin';
import { auditContext } from '../../middleware/audit';

/** /admin/api/users (docs/teams.md): invite one, list them, change a role, remove one, sign one out everywhere. */
export function usersRouter(db: Db): Router {
  const router = Router();
  router
    .route('/users')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, ...(await createUser(db, validate(userInput, req.body), changerOf(res), auditContext(req, res, 'admin-api'))) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, users: await listUsers(db, changerOf(res), validate(usersQuery, req.query).account) });
    })
    .all(methodNotAllowed);

  router
    .route('/users/:id')
    .patch(async (req, res) => {
      res.json({ ok: true, user: await changeRole(db, validate(idParam, req.params.id), validate(userChange, req.body), changerOf(res), auditContext(req, res, 'admin-api')) });
    })
    .delete(async (req, res) => {
      res.json({ ok: true, user: await removeUser(db, validate(idParam, req.params.id), changerOf(res), auditContext(req, res, 'admin-api')) });
    })
    .all(methodNotAllowed);

  router
    .route('/users/:id/signout')
    .post(async (req, res) => {
      res.json({ ok: true, sessions: await signOutUser(db, validate(idParam, req.params.id), changerOf(res), auditContext(req, res, 'admin-api')) });
    })
    .all(methodNotAllowed);
  return router;
}
