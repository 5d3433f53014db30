import { Router, type RequestHandler } from 'express';
import type { Db } from '../../../../core/src/db';
import { createReads, type Reads } from '../../../../core/src/replicas';
import { heldToRow, permitted } from '../../middleware/admin';
import { requireJsonBody } from '../../middleware/request';
import { accountsRouter } from './accounts';
import { auditRouter } from './audit';
import { broadcastsRouter } from './broadcasts';
import { campaignsRouter } from './campaigns';
import { consentRouter } from './consent';
import { deliveryStatusRouter } from './delivery-status';
import { domainsRouter } from './domains';
import { importsRouter } from './imports';
import { inboundRouter } from './inbound';
import { keysRouter } from './keys';
import { listsRouter } from './lists';
import { mailboxesRouter } from './mailboxes';
import { messagesRouter } from './messages';
import type { EmailKinds } from '../../../../core/src/delivery/kinds';
import { mxRouter } from './mx';
import { openApiRouter } from './openapi';
import { secondFactorRouter } from './second-factor';
import { statsRouter } from './stats';
import { stopListRouter } from './stop-list';
import { suppressionsRouter } from './suppressions';
import { templatesRouter } from './templates';
import { trackingDomainsRouter } from './tracking-domains';
import { usersRouter } from './users';
import { webhooksRouter } from './webhooks';

/**
 * The control plane of docs/api.md under /admin/api (behind the admin token): what the console's forms, `npm run admin`
 * and the operator's scripts use. One router per resource, each owning every method of its paths, so a method a path
 * does not take answers 405 with `Allow` naming exactly the ones it does. Every route here is in the admin API's
 * OpenAPI document (openapi/admin-document.ts); test/operator/allow.test.ts fails on a route missing from it.
 */
export function adminRouter(db: Db, json: RequestHandler, kinds: EmailKinds, reads: Reads = createReads(db, null)): Router {
  const router = Router();
  // an import reads its own body (CSV or NDJSON, streamed to Postgres), before the JSON parser
  // a person's permission from the one table (teams/permissions.ts): before the import's body, and again once the JSON
  // body names its account
  router.use(permitted);
  // a path naming a row by id: held to the row's account (reads and exports too, not only changes)
  router.use(heldToRow(db));
  router.use(importsRouter(db));
  router.use(json, requireJsonBody, permitted);
  router.use(openApiRouter());
  router.use(accountsRouter(db));
  router.use(mailboxesRouter(db));
  router.use(keysRouter(db));
  router.use(secondFactorRouter(db));
  router.use(usersRouter(db));
  router.use(auditRouter(db, reads));
  router.use(listsRouter(db, reads));
  router.use(consentRouter(db));
  router.use(campaignsRouter(db));
  router.use(messagesRouter(db, kinds));
  router.use(suppressionsRouter(db));
  router.use(stopListRouter(db));
  router.use(webhooksRouter(db));
  router.use(broadcastsRouter(db, reads));
  router.use(inboundRouter(db));
  router.use(mxRouter(db));
  router.use(statsRouter(db));
  router.use(deliveryStatusRouter(db));
  router.use(templatesRouter(db));
  router.use(domainsRouter(db));
  router.use(trackingDomainsRouter(db));
  return router;
}
