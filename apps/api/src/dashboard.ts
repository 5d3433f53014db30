import type { RequestHandler, Router } from 'express';
import { QUEUE, queue } from '../../core/src/queues';
import { loadSession } from './console/session';
import { requireAdmin } from './middleware/admin';
import type { AuthFailures } from './middleware/failures';

export const DASHBOARD_PATH = '/admin/queues';

/** bull-board over every queue of the registry; mounted behind the admin token. */
async function buildDashboard(): Promise<Router> {
  const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
    import('@bull-board/api'),
    import('@bull-board/api/bullMQAdapter'),
    import('@bull-board/express'),
  ]);
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(QUEUE).map((name) => new BullMQAdapter(queue(name))),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'mailservice queues' } },
  });
  return serverAdapter.getRouter() as Router;
}

/**
 * The dashboard, loaded on its first visit: bull-board and its templates cost every API process memory (bench/README.md)
 * and only admins open it.
 */
export function dashboardRouter(): RequestHandler {
  let dashboard: Promise<Router> | undefined;
  return (req, res, next) => {
    dashboard ??= buildDashboard();
    dashboard.then((router) => router(req, res, next), next);
  };
}

/**
 * Who may open the dashboard: a signed-in console session (its cookie, Path=/admin, SameSite=Strict, reaches
 * /admin/queues too), so the console's "Queues" link opens it without a second sign-in; otherwise the admin token,
 * as Bearer or HTTP Basic (the browser asks for it).
 */
export function dashboardAccess(failures: AuthFailures): RequestHandler {
  const token = requireAdmin(failures, { challenge: true });
  return (req, res, next) => {
    loadSession(req).then(
      (session) => {
        if (session?.admin || session?.user?.operator) return next();
        try {
          token(req, res, next);
        } catch (err) {
          next(err);
        }
      },
      (err: unknown) => next(err),
    );
  };
}
