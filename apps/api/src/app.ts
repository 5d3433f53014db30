import { createReads } from '../../core/src/replicas';
import express, { type Express } from 'express';
import type { Db } from '../../core/src/db';
import { consoleRouter } from './console';
import { DASHBOARD_PATH, dashboardAccess, dashboardRouter } from './dashboard';
import { withFastLane } from './lane';
import { requireAdmin, requireAdminOrMember } from './middleware/admin';
import { KeyAuthenticator } from './middleware/auth';
import { AuthFailures } from './middleware/failures';
import { UnreadBodies } from './middleware/unread-body';
import { errorHandler, methodNotAllowed, unknownRoute } from './middleware/errors';
import { mcpRouter } from './mcp/router';
import { requestContext } from './middleware/request';
import { config } from '../../core/src/config';
import { BodyBudget } from './middleware/body-budget';
import { createApiState, type ApiState } from './state';
import { checkedBody, refuseBadUrl } from './middleware/text';
import { refuseCrossSiteWrites, refuseFraming } from './middleware/framing';
import { adminRouter } from './routes/admin';
import { docsRouter, openApiHandler } from './routes/docs';
import { metricsHandler } from './routes/metrics';
import { healthRouter } from './routes/health';
import { pagesRouter } from './routes/pages';
import { unsubscribeRouter } from './routes/unsubscribe';
import { preferencesRouter } from './routes/preferences';
import { archiveRouter } from './routes/archive';
import { trackingRouter } from './routes/tracking';
import { acmeChallengeRouter } from './routes/acme-challenge';
import { inboundFilesRouter } from './routes/inbound-files';
import { mxFilesRouter } from './routes/mx-files';
import { v1Router } from './routes/v1';

/** Request bodies above this answer 413 (docs/api.md: the email is at most 1 MB). */
export const BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * The public pages that read a body, each with a small budget of its own (apart from the API's and from each other), a
 * share per client address, and a deadline: a body not in within PUBLIC_BODY_DEADLINE_MS is cut off. The hosted form's
 * bodies are at most 16 KB; those up to 1 KB (a person's sign-up) have a pool of their own, so strangers holding
 * large bodies do not hold back sign-ups. The one-click unsubscribe (`List-Unsubscribe=One-Click`, which mailbox
 * providers send), the confirmation post and the click and open links read no body.
 */
export const PUBLIC_BODY_DEADLINE_MS = 5_000;
export const PUBLIC_BODIES = {
  form: { budgetBytes: 1024 * 1024, bodyLimitBytes: 16 * 1024, perClientBytes: 64 * 1024, small: { budgetBytes: 256 * 1024, bodyLimitBytes: 1024, perClientBytes: 8 * 1024 } },
  signIn: { budgetBytes: 256 * 1024, bodyLimitBytes: 4 * 1024, perClientBytes: 16 * 1024 },
} as const;

export interface ApiApp {
  app: Express;
  /** what the process keeps in memory for its requests (state.ts), made here and passed down */
  state: ApiState;
  /** subscribes to key revocations; call before serving */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createApp(db: Db): ApiApp {
  const auth = new KeyAuthenticator(db);
  const failures = new AuthFailures(config().authFailuresPerMinute);
  const state = createApiState(db);
  // the console's searches and charts, the exports and dry runs read a replica when DATABASE_READ_URL names one
  const reads = createReads(db);
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
  const publicBudget = (page: keyof typeof PUBLIC_BODIES) => new BodyBudget({ ...PUBLIC_BODIES[page], deadlineMs: PUBLIC_BODY_DEADLINE_MS });
  const json = budget.around(checkedBody(express.json({ limit: BODY_LIMIT_BYTES, strict: false })));
  app.use(requestContext);
  app.use(refuseBadUrl);
  app.route('/api/v1/openapi.json').get(openApiHandler(db, auth, failures, state.sending.mailboxes)).all(methodNotAllowed);
  app.use('/docs', docsRouter());
  // the public API first: it carries the load, and every router passed on the way costs each request
  app.use('/api/v1', v1Router(db, auth, failures, json, state));
  app.use('/mcp', mcpRouter(db, auth, failures, json, state));
  app.use(healthRouter(db));
  app.use(acmeChallengeRouter(db));
  app.use(DASHBOARD_PATH, refuseFraming, refuseCrossSiteWrites, dashboardAccess(failures), dashboardRouter());
  // the JSON parser runs after the token (an import reads its own body: routes/admin/index.ts)
  app.use('/admin/api', requireAdminOrMember(db, failures), adminRouter(db, json, state.kinds, reads));
  app.route('/metrics').all(requireAdmin(failures)).get(metricsHandler(db)).all(methodNotAllowed);
  app.use('/admin', consoleRouter(db, { budget, signInBudget: publicBudget('signIn'), failures }, state.kinds, reads));
  app.use(unsubscribeRouter(db));
  app.use(trackingRouter(db));
  app.use(inboundFilesRouter(db));
  app.use(mxFilesRouter(db));
  app.use(pagesRouter(db, publicBudget('form')));
  app.use(preferencesRouter(db, publicBudget('form')));
  app.use(archiveRouter(db));
  app.use(unknownRoute);
  app.use(errorHandler);
  return {
    // the busiest writes go around Express (lane.ts); every other request, and any the lane does not take, through it;
    // whatever answers, a body the answer left unread is settled so its client can read the answer (unread-body.ts)
    app: new UnreadBodies().around(withFastLane(app, { db, state, auth, failures, budget, bodyLimitBytes: BODY_LIMIT_BYTES })),
    state,
    start: async () => {
      await auth.start();
      // failed authentications count with the other processes' (SMTP AUTH included)
      await failures.start();
    },
    stop: async () => {
      await auth.stop();
      await failures.stop();
      await state.sending.finished.stop();
      // the accepted sends' jobs still on their way to Redis (their answers did not wait for them)
      await state.sending.deliveries.settled();
      await reads.close();
    },
  };
}
