import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { requireKey, requireProspectsPermission, type KeyAuthenticator } from '../middleware/auth';
import { requireJsonBody } from '../middleware/request';
import { campaignsRouter } from './campaigns';
import { listsRouter } from './lists';
import { prospectsRouter } from './prospects';
import { sendRouter } from './send';
import { subscribersRouter } from './subscribers';

/**
 * The public API of spec section 1, top to bottom. Each resource has its own router file:
 * validate -> call a core service -> answer.
 */
export function v1Router(db: Db, auth: KeyAuthenticator): Router {
  const router = Router();
  router.use(requireKey(auth), requireJsonBody);
  router.use(sendRouter(db));
  router.use(listsRouter(db));
  router.use(subscribersRouter(db));
  router.use('/campaigns', requireProspectsPermission);
  router.use('/prospects', requireProspectsPermission);
  router.use(campaignsRouter(db));
  router.use(prospectsRouter(db));
  return router;
}
