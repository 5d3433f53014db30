import crypto from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { BadRequest } from '../../../core/src/errors';
import { logger } from '../../../core/src/logger';
import { metrics } from '../../../core/src/metrics';

/**
 * The route pattern that answered (`/api/v1/send/:id`, never the raw path: ids would make a label per request) with the
 * mount it was reached under, read once the answer is out. A route that answered keeps req.baseUrl; when an error left
 * the router, Express has reset req.baseUrl, so the mount is the path less as many segments as the pattern has (our
 * patterns are plain segments and `:params`). Watching `req.route` with an accessor instead cost about 5% of the API's
 * CPU per send (bench/README.md).
 */
function routeLabel(req: Request): string {
  const pattern = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof pattern !== 'string') return req.originalUrl.startsWith('/admin/queues') ? '/admin/queues/*' : 'unmatched';
  if (req.baseUrl) return req.baseUrl + pattern;
  const segments = req.originalUrl.split('?', 1)[0]!.split('/');
  const depth = pattern === '/' ? 1 : pattern.split('/').length;
  return segments.slice(0, Math.max(1, segments.length - depth + 1)).join('/') + pattern;
}

/**
 * A request id (the caller's X-Request-Id when sane), echoed back and put on the log line; then one structured line
 * per request: method, address (tokens redacted), status, duration. Never headers or bodies.
 */
export const requestContext: RequestHandler = (req, res, next) => {
  res.locals.requestId = trackRequest(req, res, req.url, () => routeLabel(req));
  next();
};

/** Health probes (an orchestrator's, every few seconds): their access lines are debug, not the operator's traffic. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * What requestContext does, for any handler (the fast lane's too): the request id, then once the answer is out its
 * duration in the metrics under `route()` and its log line. `url` is the address as received. Answers the id.
 */
export function trackRequest(req: IncomingMessage, res: ServerResponse, url: string, route: () => string): string {
  const started = process.hrtime.bigint();
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : crypto.randomUUID();
  res.setHeader('X-Request-Id', id);
  res.on('finish', () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    // a 503 with Retry-After is expected (a dependency away, a full budget): its outage has its own line (outage.ts)
    const fault = res.statusCode >= 500 && !(res.statusCode === 503 && res.hasHeader('retry-after'));
    const level = fault ? 'error' : PROBES.has(url.split('?', 1)[0]!) ? 'debug' : 'info';
    metrics.httpSeconds.observe({ method: req.method!, route: route(), status: res.statusCode }, ms / 1000);
    logger[level]({ requestId: id, method: req.method, url: redactedUrl(url), status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
  });
  return id;
}

/**
 * Public pages whose address carries a secret after their first segment: the confirmation, unsubscribe, click, open
 * and preference tokens (`/confirm/<token>`, `/u/<token>`, `/c/<token>`, `/o/<token>.gif`, `/preferences/<token>`). Matched as the routes would be, in any
 * letter case, and however many slashes stand around the segment (`/u//<token>`).
 */
const TOKEN_PAGES = new Set(['confirm', 'u', 'c', 'o', 'preferences']);
const PAGE_PATH = /^(\/+)([^/]+)(\/+)(.+)$/;
/** Query values whose name may hold a secret, however it is written (api_key, access-token, pw, session[id]...). */
const SECRET_IN_QUERY =
  /([?&][^=&#]*?(?:token|key|pass|pw|secret|signature|sig|auth|session|sid|cookie|csrf|code|state|otp|credential|jwt)[^=&#]*=)[^&#]*/gi;

function pageSegment(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase();
  } catch {
    return segment.toLowerCase();
  }
}

/** The request's address as logged: the whole of it (mount path and query), with secrets replaced by `[redacted]`. */
export function redactedUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  const page = PAGE_PATH.exec(path);
  const safePath = page && TOKEN_PAGES.has(pageSegment(page[2]!)) ? `${page[1]}${page[2]}${page[3]}[redacted]` : path;
  return safePath + query.replace(SECRET_IN_QUERY, '$1[redacted]');
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
