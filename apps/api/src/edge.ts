import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { clientKey } from '../../core/src/ip';
import { answerClientErrors } from './middleware/text';

/**
 * The HTTP server's timeouts. Behind a load balancer (docs/deploy.md) an idle keep-alive connection must outlive the
 * balancer's own idle timeout (60 s on the common ones): if the API closed it first, the balancer could send the next
 * request on a socket being closed and answer 502. The headers and request timeouts start only when a request begins,
 * not while a kept-alive socket waits (test/hardening/edge.test.ts shows it), so they stay short.
 */
export interface ServerTimeouts {
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** a new connection that has not sent a whole request head within this is closed (strangers hold no idle socket) */
  firstRequestMs: number;
}

export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  /** an idle kept-alive connection is closed after this, above balancers' 60 s */
  keepAliveTimeoutMs: 65_000,
  /** a client that trickles its headers is cut off */
  headersTimeoutMs: 10_000,
  /** the whole request, body included */
  requestTimeoutMs: 30_000,
  firstRequestMs: 5_000,
};

/** Connections one client may hold open at once; a proxy the operator trusts (TRUST_PROXY) is not counted. */
export interface ConnectionLimits {
  perClient: number;
  /** Express's `trust proxy fn`: whether a connection's address is a proxy whose clients are behind it */
  trusted?: (address: string, hop: number) => boolean;
}

const TOO_MANY = JSON.stringify({ ok: false, error: 'too many connections from your address; try again later' });
const TOO_MANY_ANSWER =
  'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nRetry-After: 5\r\nConnection: close\r\n' +
  `Content-Length: ${Buffer.byteLength(TOO_MANY)}\r\n\r\n${TOO_MANY}`;

/**
 * What the API's server is set to before it serves: its timeouts, answers to malformed requests, a deadline for a new
 * connection's first request head, and, given `connections`, a cap on the connections one client holds open (counted as
 * every per-client limit is: an IPv6 client by its /64); past it a connection is answered 503 and closed.
 */
export function configureServer(server: Server, timeouts: ServerTimeouts = SERVER_TIMEOUTS, connections?: ConnectionLimits): Server {
  answerClientErrors(server);
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  // Node's headers timeout starts with a request's first byte: a connection that never sends one would stay open
  const waiting = new WeakMap<Socket, NodeJS.Timeout>();
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const deadline = setTimeout(() => socket.destroy(), timeouts.firstRequestMs);
    waiting.set(socket, deadline);
    socket.once('close', () => clearTimeout(deadline));
    const address = socket.remoteAddress ?? '';
    if (!connections || connections.trusted?.(address, 0)) return;
    const client = clientKey(address);
    const held = open.get(client) ?? 0;
    if (held >= connections.perClient) {
      socket.end(TOO_MANY_ANSWER);
      return;
    }
    open.set(client, held + 1);
    socket.once('close', () => {
      const left = (open.get(client) ?? 1) - 1;
      if (left > 0) open.set(client, left);
      else open.delete(client);
    });
  });
  server.on('request', (req: { socket: Socket | null }) => {
    if (!req.socket) return;
    clearTimeout(waiting.get(req.socket));
    waiting.delete(req.socket);
  });
  return server;
}
