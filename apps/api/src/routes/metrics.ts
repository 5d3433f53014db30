import type { RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import { contentType, scrape } from '../../../core/src/metrics';

/** GET /metrics (admin token): Prometheus text; queue depths and message counts are read at scrape time. */
export function metricsHandler(db: Db): RequestHandler {
  return async (_req, res) => {
    res.set('Content-Type', contentType).set('Cache-Control', 'no-store').send(await scrape({ db }));
  };
}
