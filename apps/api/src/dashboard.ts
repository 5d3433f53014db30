import type { RequestHandler, Router } from 'express';
import { QUEUE, queue } from '../../core/src/queues';

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
