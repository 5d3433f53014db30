import type { Server } from 'node:http';
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
}

export const SERVER_TIMEOUTS: Readonly<ServerTimeouts> = {
  /** an idle kept-alive connection is closed after this, above balancers' 60 s */
  keepAliveTimeoutMs: 65_000,
  /** a client that trickles its headers is cut off */
  headersTimeoutMs: 10_000,
  /** the whole request, body included */
  requestTimeoutMs: 30_000,
};

/** What the API's server is set to before it serves: its timeouts, and answers to malformed requests. */
export function configureServer(server: Server, timeouts: ServerTimeouts = SERVER_TIMEOUTS): Server {
  answerClientErrors(server);
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  return server;
}
