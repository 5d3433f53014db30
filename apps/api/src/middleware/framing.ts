import type { RequestHandler } from 'express';
import { Forbidden } from '../../../core/src/errors';

/** No other site may frame the page (clickjacking). */
export const refuseFraming: RequestHandler = (_req, res, next) => {
  res.set({ 'X-Frame-Options': 'DENY', 'Content-Security-Policy': "frame-ancestors 'none'" });
  next();
};

/**
 * A browser remembers Basic credentials and sends them with a form another site posts: a write is taken only from this
 * site (Origin or Sec-Fetch-Site say so) or from a client that sends neither (curl, scripts).
 */
export const refuseCrossSiteWrites: RequestHandler = (req, _res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
  const site = req.get('sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') throw new Forbidden('cross-site writes are refused');
  const origin = req.get('origin');
  if (origin !== undefined) {
    let host: string | undefined;
    try {
      host = new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== req.get('host')) throw new Forbidden('cross-site writes are refused');
  }
  next();
};
