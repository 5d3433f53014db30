import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { BadRequest } from '../../../core/src/errors';

/** Deeper bodies are refused: nothing we store nests this far, and walking 5,000 levels overflows the stack. */
export const MAX_BODY_DEPTH = 32;

/**
 * Text Postgres cannot store is refused here, once, before any route sees it: a NUL byte (in a body or an escaped
 * path or query) or a lone UTF-16 surrogate; and bodies nested deeper than MAX_BODY_DEPTH.
 */
export const refuseBadUrl: RequestHandler = (req, _res, next) => {
  if (/%00/i.test(req.url)) throw new BadRequest('the address holds a NUL byte (%00)');
  next();
};

/** A body parser followed by the check of what it parsed, as one handler (the MCP router takes one). */
type Handler = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
export function checkedBody(parse: Handler): Handler {
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      if (err) return next(err);
      try {
        checkBody((req as Request).body);
      } catch (refusal) {
        return next(refusal);
      }
      next();
    });
}

/** Throws the 400 for a parsed body holding text Postgres cannot store, or nested deeper than MAX_BODY_DEPTH. */
export function checkBody(body: unknown): void {
  if (body !== undefined) checkValue(body, 0, 'body');
}

function checkValue(value: unknown, depth: number, where: string): void {
  if (typeof value === 'string') return checkText(value, where);
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_BODY_DEPTH) throw new BadRequest(`${where} is nested deeper than ${MAX_BODY_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkValue(value[i], depth + 1, `${where}[${i}]`);
    return;
  }
  for (const key of Object.keys(value)) {
    checkText(key, where);
    checkValue((value as Record<string, unknown>)[key], depth + 1, `${where}.${key}`);
  }
}

const SUSPECT = /[\0\uD800-\uDFFF]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkText(text: string, where: string): void {
  if (!SUSPECT.test(text)) return;
  if (text.includes('\0')) throw new BadRequest(`${where} holds a NUL byte (\\u0000), which cannot be stored`);
  if (LONE_SURROGATE.test(text)) throw new BadRequest(`${where} holds a lone UTF-16 surrogate, which is not text`);
}

/** Node answers oversized headers (over 16 KB) and unparsable requests with an empty body: ours is JSON like every refusal. */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err.code === 'ECONNRESET' && !socket.bytesWritten)) return void socket.destroy();
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW' || err.code === 'HPE_URI_OVERFLOW';
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const [status, reason, error] = tooLarge
      ? [431, 'Request Header Fields Too Large', 'the request line and headers are over the limit of 16 KB']
      : timeout
        ? [408, 'Request Timeout', 'the request took too long to arrive']
        : [400, 'Bad Request', 'the request is not valid HTTP'];
    const body = JSON.stringify({ ok: false, error });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
