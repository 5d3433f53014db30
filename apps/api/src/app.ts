import express, { type Express } from 'express';
import type { Db } from '../../core/src/db';
import { consoleRouter } from './console';
import { DASHBOARD_PATH, dashboardRouter } from './dashboard';
import { withFastLane } from './lane';
import { requireAdmin } from './middleware/admin';
import { KeyAuthenticator } from './middleware/auth';
import { AuthFailures } from './middleware/failures';
import { UnreadBodies } from './middleware/unread-body';
import { errorHandler, unknownRoute } from './middleware/errors';
import { mcpRouter } from './mcp/router';
import { requestContext, requireJsonBody } from './middleware/request';
import { config } from '../../core/src/config';
import { BodyBudget } from './middleware/body-budget';
import { checkedBody, refuseBadUrl } from './middleware/text';
import { refuseCrossSiteWrites, refuseFraming } from './middleware/framing';
import { adminRouter } from './routes/admin';
import { importsRouter } from './routes/imports';
import { docsRouter, openApiHandler } from './routes/docs';
import { metricsHandler } from './routes/metrics';
import { healthRouter } from './routes/health';
import { pagesRouter } from './routes/pages';
import { unsubscribeRouter } from './routes/unsubscribe';
import { trackingRouter } from './routes/tracking';
import { v1Router } from './routes/v1';

/** Request bodies above this answer 413 (docs/api.md: the email is at most 1 MB). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/** The public pages' bodies (forms of a few fields) share this much, and one client address this much of it. */
export const PUBLIC_BODY_BUDGET_BYTES = 1024 * 1024;
export const PUBLIC_BODY_BYTES_PER_CLIENT = 64 * 1024;
/** The largest public form body (the hosted form's 16 KB); the console's sign-in and the unsubscribe post are smaller. */
const PUBLIC_BODY_LIMIT_BYTES = 16 * 1024;

export interface ApiApp {
  app: Express;
  /** subscribes to key revocations; call before serving */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createApp(db: Db): ApiApp {
  const auth = new KeyAuthenticator(db);
  const failures = new AuthFailures(config().authFailuresPerMinute);
  const app = express();
  app.disable('x-powered-by');
  // answers are fresh state, mostly to writes: an ETag (a hash of every body) would cost each request for no use
  app.set('etag', false);
  // X-Forwarded-For is believed only from the proxies the operator names (TRUST_PROXY); by default from none
  app.set('trust proxy', config().trustProxy);
  app.set('query parser', 'simple');
  // a body is read only after its credential was checked (or on a public page, from their own small budget): a
  // stranger's request to an unknown route or with a wrong credential reads none (docs/hardening.md)
  const budget = new BodyBudget({ budgetBytes: config().maxBodyBytesInFlight, bodyLimitBytes: BODY_LIMIT_BYTES });
  const publicBudget = new BodyBudget({ budgetBytes: PUBLIC_BODY_BUDGET_BYTES, bodyLimitBytes: PUBLIC_BODY_LIMIT_BYTES, perClientBytes: PUBLIC_BODY_BYTES_PER_CLIENT });
  const json = budget.around(checkedBody(express.json({ limit: BODY_LIMIT_BYTES, strict: false })));
  app.use(requestContext);
  app.use(refuseBadUrl);
  app.get('/api/v1/openapi.json', openApiHandler(db, auth, failures));
  app.use('/docs', docsRouter());
  // the public API first: it carries the load, and every router passed on the way costs each request
  app.use('/api/v1', v1Router(db, auth, failures, json));
  app.use('/mcp', mcpRouter(db, auth, failures, json));
  app.use(healthRouter(db));
  app.use(DASHBOARD_PATH, refuseFraming, refuseCrossSiteWrites, requireAdmin(failures, { challenge: true }), dashboardRouter());
  // an import reads its own body (CSV or NDJSON, streamed to Postgres), after the token, before the JSON parser
  app.use('/admin/api', requireAdmin(failures), importsRouter(db), json, requireJsonBody, adminRouter(db));
  app.get('/metrics', requireAdmin(failures), metricsHandler(db));
  app.use('/admin', consoleRouter(db, { budget, publicBudget, failures }));
  app.use(unsubscribeRouter(db, publicBudget));
  app.use(trackingRouter(db));
  app.use(pagesRouter(db, publicBudget));
  app.use(unknownRoute);
  app.use(errorHandler(new UnreadBodies()));
  return {
    // the busiest writes go around Express (lane.ts); every other request, and any the lane does not take, through it
    app: withFastLane(app, { db, auth, budget, bodyLimitBytes: BODY_LIMIT_BYTES }),
    start: () => auth.start(),
    stop: () => auth.stop(),
  };
}
