import type { IncomingMessage, ServerResponse } from 'node:http';

/** A refused body up to this size is read to its end and dropped, so its client can always read the answer. */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024;
/** A refused body that sends nothing for this long is cut off. */
export const DRAIN_IDLE_MS = 5_000;
/** Refused bodies one client address may have drained at once; past it the connection is closed after the answer. */
export const DRAINS_PER_CLIENT = 16;

/**
 * What happens to a body left unread by a refusal (an unknown route, a failed credential, a limit). Closing the
 * connection right after the answer while the client still writes makes the kernel reset it, and a client may then lose
 * the answer it was sent (a 401 read as a reset). So the rest of a body of a declared, moderate length is read and
 * dropped (nothing is kept) while the connection stays open, with a cut-off for a client that trickles; the server's
 * requestTimeout bounds the whole. Past DRAINS_PER_CLIENT drains of one address, or for a larger or chunked body, the
 * answer carries `Connection: close` instead: those clients can hold no more sockets.
 */
export class UnreadBodies {
  private readonly draining = new Map<string, number>();

  /** Called before a refusal is written; `client` is the request's address. */
  settle(req: IncomingMessage, res: ServerResponse, client: string): void {
    const hasBody = Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody || req.complete || req.readableDidRead) return;
    const declared = Number(req.headers['content-length'] ?? 0);
    const count = this.draining.get(client) ?? 0;
    if (!(declared > 0 && declared <= DRAIN_MAX_BYTES) || count >= DRAINS_PER_CLIENT) {
      res.setHeader('Connection', 'close');
      return;
    }
    this.draining.set(client, count + 1);
    let idle: NodeJS.Timeout | undefined;
    const done = () => {
      if (idle === undefined) return;
      clearTimeout(idle);
      idle = undefined;
      // a kept-alive socket outlives this request: a listener left on it would hold the request and its answer until
      // the client hangs up (50 connections of refusals took the API past 600 MB in 10 s)
      req.socket.off('close', done);
      req.off('data', arm);
      const left = (this.draining.get(client) ?? 1) - 1;
      if (left > 0) this.draining.set(client, left);
      else this.draining.delete(client);
    };
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        done();
        req.socket.destroy();
      }, DRAIN_IDLE_MS);
    };
    arm();
    req.on('data', arm);
    req.once('end', done);
    req.socket.once('close', done);
    req.resume();
  }

  /** Bodies being drained now (for tests). */
  get size(): number {
    let total = 0;
    for (const count of this.draining.values()) total += count;
    return total;
  }
}
