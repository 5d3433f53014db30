import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { Router } from 'express';
import { QUEUE, queue } from '../../core/src/queues';

export const DASHBOARD_PATH = '/admin/queues';

/** bull-board over every queue of the registry; mounted behind the admin token. */
export function dashboardRouter(): Router {
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: Object.values(QUEUE).map((name) => new BullMQAdapter(queue(name))),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'mailservice queues' } },
  });
  return serverAdapter.getRouter() as Router;
}
