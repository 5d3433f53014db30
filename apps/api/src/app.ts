import express, { type Express } from 'express';
import type { Db } from '../../core/src/db';
import { consoleRouter } from './console';
import { DASHBOARD_PATH, dashboardRouter } from './dashboard';
import { withFastLane } from './lane';
import { requireAdmin } from './middleware/admin';
import { KeyAuthenticator } from './middleware/auth';
import { errorHandler, unknownRoute } from './middleware/errors';
import { mcpRouter } from './mcp/router';
import { requestContext, requireJsonBody } from './middleware/request';
import { config } from '../../core/src/config';
import { BodyBudget } from './middleware/body-budget';
import { checkedBody, refuseBadUrl } from './middleware/text';
import { refuseCrossSiteWrites, refuseFraming } from './middleware/framing';
import { adminRouter } from './routes/admin';
import { docsRouter, openApiHandler } from './routes/docs';
import { metricsHandler } from './routes/metrics';
import { healthRouter } from './routes/health';
import { pagesRouter } from './routes/pages';
import { unsubscribeRouter } from './routes/unsubscribe';
import { v1Router } from './routes/v1';

/** Request bodies above this answer 413 (spec section 8: the email is at most 1 MB). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface ApiApp {
  app: Express;
  /** subscribes to key revocations; call before serving */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createApp(db: Db): ApiApp {
  const auth = new KeyAuthenticator(db);
  const app = express();
  app.disable('x-powered-by');
  // answers are fresh state, mostly to writes: an ETag (a hash of every body) would cost each request for no use
  app.set('etag', false);
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  app.set('query parser', 'simple');
  const budget = new BodyBudget({ budgetBytes: config().maxBodyBytesInFlight, bodyLimitBytes: BODY_LIMIT_BYTES });
  const json = budget.around(checkedBody(express.json({ limit: BODY_LIMIT_BYTES, strict: false })));
  app.use(requestContext);
  app.use(refuseBadUrl);
  app.get('/api/v1/openapi.json', openApiHandler());
  app.use('/docs', docsRouter());
  // the public API first: it carries the load, and every router passed on the way costs each request
  app.use('/api/v1', v1Router(db, auth, json));
  app.use('/mcp', mcpRouter(db, auth, json));
  app.use(healthRouter(db));
  app.use(DASHBOARD_PATH, refuseFraming, refuseCrossSiteWrites, requireAdmin({ challenge: true }), dashboardRouter());
  app.use(json);
  app.use('/admin/api', requireAdmin(), requireJsonBody, adminRouter(db));
  app.get('/metrics', requireAdmin(), metricsHandler(db));
  app.use('/admin', consoleRouter(db));
  app.use(unsubscribeRouter(db));
  app.use(pagesRouter(db));
  app.use(unknownRoute);
  app.use(errorHandler);
  return {
    // the busiest writes go around Express (lane.ts); every other request, and any the lane does not take, through it
    app: withFastLane(app, { db, auth, budget, bodyLimitBytes: BODY_LIMIT_BYTES }),
    start: () => auth.start(),
    stop: () => auth.stop(),
  };
}
