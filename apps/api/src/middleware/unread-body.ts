import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Express } from 'express';
import { clientOf } from './client';

/** A body this long or shorter, left unread by an answer, is read to its end and dropped on a kept-alive connection. */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
/** A left body that sends nothing for this long is cut off. */
export const DRAIN_IDLE_MS = 5_000;
/** A larger or chunked left body: after the answer and its FIN, at most this much more of it is read and dropped... */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** ...for at most this long; then the connection is closed. */
export const LINGER_MS = 10_000;
/** Left bodies one client (core/ip clientKey: an IPv6 client by its /64) may have read at once; past it the connection is closed right after the answer. */
export const DRAINS_PER_CLIENT = 16;

type Handler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/**
 * What happens to a request body that its answer left unread, whoever answered (a refusal before the body was read, a
 * route that reads none, a parser that stopped at its limit): a property of the server, not of routes. Closing a
 * connection while its client still writes makes the kernel reset it, and the client may then lose the answer it was
 * sent (a 401 or 413 read as EPIPE or ECONNRESET). So, decided when the answer's headers are written:
 *  - a body of a declared length up to DRAIN_MAX_BYTES is read to its end and dropped while the connection stays open
 *    (cut off when it sends nothing for DRAIN_IDLE_MS);
 *  - a larger or chunked body: the answer says `Connection: close`, and once it is written the server half-closes the
 *    connection (FIN: the client sees the answer and the end) and reads and drops the rest of the body until it ends,
 *    up to LINGER_MAX_BYTES and LINGER_MS, then closes (RFC 9112 9.6, "tear-down");
 *  - past DRAINS_PER_CLIENT of these at once for one client address, the connection is closed after the answer.
 * Nothing of a left body is kept. The server's requestTimeout bounds the whole.
 */
export class UnreadBodies {
  private readonly draining = new Map<string, number>();

  /** `handler` (the app) with every answer to a request with a body watched: what the answer leaves unread is settled. */
  around(handler: Express): Express {
    const watched = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => {
      if (hasBody(req)) this.watch(req, res);
      (handler as unknown as Handler)(req, res, next);
    };
    Object.setPrototypeOf(watched, handler);
    return watched as unknown as Express;
  }

  /** Settles the body when the answer's headers go out (they may have to say `Connection: close`). */
  private watch(req: IncomingMessage, res: ServerResponse): void {
    const writeHead = res.writeHead;
    res.writeHead = ((...args: Parameters<ServerResponse['writeHead']>) => {
      res.writeHead = writeHead;
      this.settle(req, res);
      return writeHead.apply(res, args);
    }) as ServerResponse['writeHead'];
  }

  private settle(req: IncomingMessage, res: ServerResponse): void {
    // a destroyed request has no socket left, while its answer may still go out on the response's
    const socket = (req.socket ?? res.socket) as Socket | null;
    if (req.complete || !socket || socket.destroyed) return;
    const client = clientOf(req);
    const count = this.draining.get(client) ?? 0;
    if (count >= DRAINS_PER_CLIENT) {
      res.setHeader('Connection', 'close');
      return;
    }
    this.draining.set(client, count + 1);
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > 0 && declared <= DRAIN_MAX_BYTES && res.shouldKeepAlive && !res.hasHeader('connection')) this.drain(req, socket, client);
    else {
      res.setHeader('Connection', 'close');
      this.linger(req, res, socket, client);
    }
  }

  /** Reads the rest on a connection that stays open; a body that stops coming is cut off. */
  private drain(req: IncomingMessage, socket: Socket, client: string): void {
    let idle: NodeJS.Timeout | undefined;
    const done = () => {
      if (idle === undefined) return;
      clearTimeout(idle);
      idle = undefined;
      // a kept-alive socket outlives this request: a listener left on it would hold the request and its answer until
      // the client hangs up (50 connections of refusals took the API past 600 MB in 10 s)
      socket.off('close', done);
      req.off('data', arm);
      this.release(client);
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        done();
        socket.destroy();
      }, DRAIN_IDLE_MS);
    };
    arm();
    req.on('data', arm);
    req.once('end', done);
    socket.once('close', done);
    req.resume();
  }

  /** Reads the rest after the answer and a half-close, within LINGER_MAX_BYTES and LINGER_MS; then closes. */
  private linger(req: IncomingMessage, res: ServerResponse, socket: Socket, client: string): void {
    let read = 0;
    let answered = false;
    let idle: NodeJS.Timeout | undefined;
    const close = () => socket.destroy();
    // the client has sent all: close once the answer and the FIN are out (destroying earlier could drop the answer)
    const closeWhenSent = () => (socket.writableFinished ? close() : socket.once('finish', close));
    const whole = setTimeout(close, LINGER_MS);
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(close, DRAIN_IDLE_MS);
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > LINGER_MAX_BYTES) close();
      else arm();
    };
    req.on('data', onData);
    // the body ended: once the answer is out there is nothing left to wait for
    req.once('end', () => answered && closeWhenSent());
    arm();
    // Node closes a `Connection: close` connection with destroySoon once the answer is written: the socket would be
    // closed while the client still writes (a reset). Here it only half-closes, and the reading above ends it.
    socket.destroySoon = () => {
      answered = true;
      socket.end();
      if (req.complete) closeWhenSent();
    };
    socket.once('close', () => {
      clearTimeout(whole);
      clearTimeout(idle);
      this.release(client);
    });
    res.once('close', () => {
      // an answer cut short (the socket closed under it) leaves nothing to linger for
      if (!res.writableFinished) close();
    });
    req.resume();
  }

  private release(client: string): void {
    const left = (this.draining.get(client) ?? 1) - 1;
    if (left > 0) this.draining.set(client, left);
    else this.draining.delete(client);
  }

  /** Bodies being drained now (for tests). */
  get size(): number {
    let total = 0;
    for (const count of this.draining.values()) total += count;
    return total;
  }
}

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}
