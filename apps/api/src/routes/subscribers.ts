import type { Request, Router } from 'express';
import type { Db } from '../../../core/src/db';
import { addSubscriber, removeSubscriber, requireAccountList, subscriberInput, unsubscribeInput } from '../../../core/src/subscribers';
import { validate } from '../../../core/src/validate';
import { methodNotAllowed } from '../middleware/errors';
import { idempotent } from '../middleware/idempotency';

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null && !Array.isArray(value);
// many HTTP clients drop DELETE bodies: the same fields are accepted as query parameters
const unsubscribeRequest = (req: Request): unknown => (isObject(req.body) ? { ...req.query, ...req.body } : req.body ?? { ...req.query });

/** Spec 4.3 and 4.4: add a subscriber (double opt-in), unsubscribe one. */
export function subscribersRoutes(router: Router, db: Db): void {
  router
    .route('/subscribers')
    .post(idempotent(db, 'POST /subscribers'), async (req, res) => {
      const { list: key, ...person } = validate(subscriberInput, req.body ?? {});
      const list = await requireAccountList(db, res.locals.key.accountId, key);
      res.json({ ok: true, status: await addSubscriber(db, list, person, 'api') });
    })
    .delete(idempotent(db, 'DELETE /subscribers', unsubscribeRequest), async (req, res) => {
      const { list: key, email } = validate(unsubscribeInput, unsubscribeRequest(req));
      const list = await requireAccountList(db, res.locals.key.accountId, key);
      res.json({ ok: true, status: await removeSubscriber(db, list, email) });
    })
    .all(methodNotAllowed);
}
