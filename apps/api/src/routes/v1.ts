import { Router, type RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import type { ApiState } from '../state';
import { refuseTestKeys, requireKey, requireProspectsPermission, requireScope, type KeyAuthenticator } from '../middleware/auth';
import type { AuthFailures } from '../middleware/failures';
import { requireJsonBody } from '../middleware/request';
import { campaignsRoutes } from './campaigns';
import { inboundRoutes } from './inbound';
import { listsRoutes } from './lists';
import { prospectsRoutes } from './prospects';
import { sendRoutes } from './send';
import { subscribersRoutes } from './subscribers';
import { templatesRoutes } from './templates';
import { verifyRoutes } from './verify';

/**
 * The public API of docs/api.md, top to bottom. Each resource has its own routes file (validate -> call a core
 * service -> answer), registered on this one router: a nested router per resource cost every request a level of
 * Express's routing.
 */
export function v1Router(db: Db, auth: KeyAuthenticator, failures: AuthFailures, json: RequestHandler, state: ApiState): Router {
  const router = Router();
  // the key (a header) is checked before a byte of the body is read: an unauthenticated client holds no memory
  router.use(requireKey(auth, failures), requireScope, json, requireJsonBody);
  sendRoutes(router, db, state.sending);
  // a test key goes no further (docs/sandbox.md)
  router.use(refuseTestKeys);
  listsRoutes(router, db);
  subscribersRoutes(router, db, state.adds, state.verifier);
  templatesRoutes(router, db);
  router.use('/campaigns', requireProspectsPermission);
  router.use('/prospects', requireProspectsPermission);
  campaignsRoutes(router, db);
  prospectsRoutes(router, db, state.verifier);
  inboundRoutes(router, db);
  verifyRoutes(router, db, state.verifier);
  return router;
}
