import type { Request, Router } from 'express';
import { subscribe, unsubscribe } from '../../../core/src/subscribers/operations';
import type { Db } from '../../../core/src/db';
import type { FastAdds } from '../../../core/src/subscribers/fast-add';
import type { Verifier } from '../../../core/src/verify';
import { methodNotAllowed } from '../middleware/errors';
import { idempotent } from '../middleware/idempotency';

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value);
// many HTTP clients drop DELETE bodies: the same fields are accepted as query parameters
const unsubscribeRequest = (req: Request): unknown => (isObject(req.body) ? { ...req.query, ...req.body } : req.body ?? { ...req.query });

/** docs/api.md: add a subscriber (double opt-in), unsubscribe one. */
export function subscribersRoutes(router: Router, db: Db, adds: FastAdds, verifier: Verifier): void {
  router
    .route('/subscribers')
    .post(idempotent(db, 'POST /subscribers'), async (req, res) => {
      res.json(await subscribe(db, adds, verifier, res.locals.key, req.body));
    })
    .delete(idempotent(db, 'DELETE /subscribers', unsubscribeRequest), async (req, res) => {
      res.json(await unsubscribe(db, res.locals.key, unsubscribeRequest(req)));
    })
    .all(methodNotAllowed);
}
