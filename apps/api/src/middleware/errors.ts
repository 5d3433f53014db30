import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { AppError, MethodNotAllowed, NotFound } from '../../../core/src/errors';
import { logger } from '../../../core/src/logger';
import { dependencies, isDatabaseUnavailable, OUTAGE_RETRY_AFTER_SECONDS } from '../../../core/src/outage';
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

interface BodyParserError {
  type?: string;
  status?: number;
}

/** What a refusal answers: its status, its headers and the `error` of `{ok:false, error}`. */
export interface Refusal {
  status: number;
  headers: Record<string, string>;
  message: string;
}

/**
 * The one place refusals are worded: `{ok:false, error}` with the error's status; faults become 500 with a request
 * id (and an error log line), an unreachable database 503 with Retry-After.
 */
export function refusalOf(err: unknown, requestId: string, request: { method?: string; path: string }): Refusal {
  let status = 500;
  let message = `internal error (request id ${requestId})`;
  let headers: Record<string, string> = {};
  const parserError = err as BodyParserError;
  if (err instanceof AppError) {
    status = err.status;
    message = err.message;
    headers = err.headers;
  } else if (isDatabaseUnavailable(err)) {
    // Postgres is stopped or restarting: nothing was accepted, the same request may simply be repeated. An expected
    // answer, logged as the outage's one warn line (outage.ts), with no stack
    dependencies.down('postgres', err);
    status = 503;
    message = 'the service is briefly unavailable (database unreachable); repeat the request shortly';
    headers = { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) };
  } else if (parserError.type === 'entity.too.large') {
    status = 413;
    message = 'the request body is over the limit of 1 MB';
  } else if (parserError.type === 'entity.parse.failed') {
    status = 400;
    message = 'the body is not valid JSON';
  } else if (parserError.type === 'encoding.unsupported' || parserError.type === 'charset.unsupported') {
    status = 415;
    message = 'the body must be UTF-8 JSON';
  } else if (parserError.type === 'request.aborted') {
    status = 400;
    message = 'the request was aborted';
  } else if (typeof parserError.status === 'number' && parserError.status >= 400 && parserError.status < 500) {
    // the body parser's and the router's own refusals (a body that does not inflate, a path with a bad %-escape)
    status = parserError.status;
    message = status === 400 ? 'the request could not be read (check its encoding and escapes)' : `the request was refused (${status})`;
  }
  // a fault is an error line with its stack; an expected 503 (an outage, a full budget) is not: the outage has its one
  // warn line (outage.ts)
  if (status === 500) {
    logger.error({ err, requestId, method: request.method, path: redactedUrl(request.path) }, 'request failed');
  }
  return { status, headers, message };
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
