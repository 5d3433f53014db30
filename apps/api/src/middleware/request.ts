import crypto from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { BadRequest } from '../../../core/src/errors';
import { logger } from '../../../core/src/logger';
import { metrics } from '../../../core/src/metrics';

/**
 * Notes the route pattern that answers (`/api/v1/send/:id`, never the raw path: ids would make a label per request) with
 * the mount it was reached under: Express resets req.baseUrl when an error leaves the router, before the answer.
 */
function watchRoute(req: Request): () => string {
  let route: { path?: string } | undefined;
  let label = '';
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => route,
    set(value: { path?: string } | undefined) {
      route = value;
      if (value?.path !== undefined) label = req.baseUrl + value.path;
    },
  });
  return () => label || (req.originalUrl.startsWith('/admin/queues') ? '/admin/queues/*' : 'unmatched');
}

/**
 * A request id (the caller's X-Request-Id when sane), echoed back and put on the log line; then one structured line
 * per request: method, address (tokens redacted), status, duration. Never headers or bodies.
 */
export const requestContext: RequestHandler = (req, res, next) => {
  const started = process.hrtime.bigint();
  const routeLabel = watchRoute(req);
  const given = req.get('x-request-id');
  const id = given && /^[\w.-]{1,100}$/.test(given) ? given : crypto.randomUUID();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  res.on('finish', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const level = res.statusCode >= 500 ? 'error' : req.path === '/healthz' ? 'debug' : 'info';
    metrics.httpSeconds.observe({ method: req.method, route: routeLabel(), status: res.statusCode }, ms / 1000);
    logger[level]({ requestId: id, method: req.method, url: redactedUrl(req.originalUrl), status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
  });
  next();
};

/** Page paths that carry a secret (a confirmation or unsubscribe token), and token query values. */
const TOKEN_IN_PATH = /^(\/(?:confirm|u)\/)[^/?#]+/;
const TOKEN_IN_QUERY = /([?&](?:token|key)=)[^&#]*/gi;

/** The request's address as logged: the whole of it (mount path and query), with tokens replaced. */
export function redactedUrl(url: string): string {
  return url.replace(TOKEN_IN_PATH, '$1[redacted]').replace(TOKEN_IN_QUERY, '$1[redacted]');
}

/** A body on a JSON endpoint must be declared as JSON; otherwise it would silently read as empty. */
export const requireJsonBody: RequestHandler = (req, _res, next) => {
  // the JSON parser ran before and took the body: it was declared as JSON
  if (req.body !== undefined) return next();
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (hasBody && !req.is('application/json')) {
    throw new BadRequest('send the body as JSON with Content-Type: application/json');
  }
  next();
};
