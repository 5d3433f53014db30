import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ValidationError } from 'joi';
import { AppError, MethodNotAllowed, NotFound } from '../../../core/src/errors';
import { logger } from '../../../core/src/logger';
import { dependencies, isDatabaseUnavailable, isRedisConnectionError, OUTAGE_RETRY_AFTER_SECONDS } from '../../../core/src/outage';
import { redactedUrl } from './request';

/** Unknown routes answer JSON too. */
export const unknownRoute: RequestHandler = (req) => {
  throw new NotFound(`no route ${req.method} ${req.path}`);
};

/**
 * For `router.route(path).get(...).all(methodNotAllowed)`: 405 with `Allow` naming the route's methods (RFC 9110
 * 15.5.6; HEAD wherever GET is, as Express answers it).
 */
export const methodNotAllowed: RequestHandler = (req) => {
  const methods = Object.keys((req.route as { methods?: Record<string, boolean> } | undefined)?.methods ?? {})
    .filter((m) => m !== '_all')
    .map((m) => m.toUpperCase());
  if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
  throw new MethodNotAllowed(`${req.method} is not allowed on ${req.path}`, { Allow: methods.join(', ') });
};

/**
 * body-parser's errors (http-errors, told apart by their documented `type`) and the words we answer them with. Other
 * errors of the Express stack with a 4xx status keep it, in plain words (clientErrorStatus).
 */
const BODY_REFUSALS = new Map<unknown, { status: number; message: string }>([
  ['entity.too.large', { status: 413, message: 'the request body is over the limit of 1 MB' }],
  ['entity.parse.failed', { status: 400, message: 'the body is not valid JSON' }],
  ['encoding.unsupported', { status: 415, message: 'the body must be UTF-8 JSON' }],
  ['charset.unsupported', { status: 415, message: 'the body must be UTF-8 JSON' }],
  ['request.aborted', { status: 400, message: 'the request was aborted' }],
]);

/**
 * The 4xx status an error of the Express stack carries (http-errors' of body-parser and raw-body; the router's URIError
 * for a bad %-escape, router 2 lib/layer.js:336), read as Express's finalhandler reads it: `status`, else `statusCode`.
 */
function clientErrorStatus(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const { status, statusCode } = err as { status?: unknown; statusCode?: unknown };
  const code = typeof status === 'number' ? status : statusCode;
  return typeof code === 'number' && code >= 400 && code < 500 ? code : undefined;
}

/**
 * What a refusal answers: its status, its headers (Retry-After, Allow...), the `error` of `{ok:false, error}`, and for
 * a fault or an outage (5xx) the request id the log line carries.
 */
export interface Refusal {
  status: number;
  headers: Record<string, string>;
  message: string;
  requestId?: string;
}

/**
 * The one error mapper, for every way a request comes in: Express's error handler, the fast lane (lane.ts), the console's
 * and the public pages' error pages, and the MCP tools (mcp/tools.ts). Decided by the error's class (AppError and its
 * subclasses, joi's ValidationError, an outage by outage.ts's classes and codes), body-parser's `type` and the Express
 * stack's 4xx status, never by its words. A fault is 500 `internal error (request id ...)` and an error line with its
 * stack; an unreachable Postgres or Redis is 503 with Retry-After and the outage's one warn line (outage.ts), no line
 * per request.
 */
export function refusalOf(err: unknown, requestId: string, request: { method?: string; path: string }): Refusal {
  if (err instanceof AppError) return { status: err.status, headers: err.headers, message: err.message, ...(err.status >= 500 ? { requestId } : {}) };
  if (err instanceof ValidationError) return { status: 400, headers: {}, message: err.message };
  const away = isDatabaseUnavailable(err) ? 'postgres' : isRedisConnectionError(err) ? 'redis' : undefined;
  if (away) {
    // Postgres or Redis is stopped or restarting: the request may simply be repeated. The outage's one warn line
    dependencies.down(away, err);
    return {
      status: 503,
      headers: { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
      message: `the service is briefly unavailable (${away === 'postgres' ? 'database' : 'Redis'} unreachable); repeat the request shortly`,
      requestId,
    };
  }
  // body-parser's, and the fast lane's own reading of a body, which gives the same types (lane.ts readJson)
  const body = err instanceof Error ? BODY_REFUSALS.get((err as { type?: unknown }).type) : undefined;
  if (body) return { ...body, headers: {} };
  const status = clientErrorStatus(err);
  if (status !== undefined) {
    // the body parser's and the router's own refusals (a body that does not inflate, a path with a bad %-escape)
    const message = status === 400 ? 'the request could not be read (check its encoding and escapes)' : `the request was refused (${status})`;
    return { status, headers: {}, message };
  }
  logger.error({ err, requestId, method: request.method, path: redactedUrl(request.path) }, 'request failed');
  return { status: 500, headers: {}, message: `internal error (request id ${requestId})`, requestId };
}

/** A JSON answer as Express's res.json writes it, for handlers that run without Express (the fast lane). */
export function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function setHeaders(res: ServerResponse, headers: Record<string, string>): void {
  for (const name in headers) res.setHeader(name, headers[name]!);
}

/** Writes a refusal of refusalOf without Express (the fast lane): its headers, then `{ok:false, error}` with its status. */
export function writeRefusal(res: ServerResponse, refusal: Refusal): void {
  setHeaders(res, refusal.headers);
  writeJson(res, refusal.status, { ok: false, error: refusal.message });
}

/**
 * Express's end of every route: the refusal of refusalOf. It touches nothing of the connection: a body the refusal left
 * unread is settled by the server (unread-body.ts); a request whose connection is gone gets no answer, only its log
 * line; and nothing here reads the request's socket, which is null once the request was destroyed (an async iterator
 * left early does that) although its answer may still go out.
 */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const refusal = refusalOf(err, String(res.locals.requestId ?? ''), req);
  if (res.headersSent || res.destroyed) return;
  // through res.json, not writeRefusal: idempotent() (middleware/idempotency.ts) watches res.json to free the key of a
  // refused request
  res.set(refusal.headers).status(refusal.status).json({ ok: false, error: refusal.message });
};
