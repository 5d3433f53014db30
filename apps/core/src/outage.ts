/**
 * Whether an error says Postgres is unreachable or going away (stopped, restarting, connection dropped), rather than
 * refusing this statement: such a request may be repeated as it is, so the API answers 503 with Retry-After, and a
 * worker keeps what it could not write and tries again.
 */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);
/** admin_shutdown, crash_shutdown, cannot_connect_now, connection_exception class */
const PG_CODES = new Set(['57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);
/** Prisma: can't reach the server, timed out, server closed the connection, pool timeout */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
const MESSAGES = /Connection terminated|Can't reach database server|connection (?:is )?closed|terminating connection|the database system is (?:shutting down|starting up|in recovery mode)|Client has encountered a connection error|timeout exceeded when trying to connect/i;

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as { code?: unknown; message?: unknown; kind?: unknown; cause?: unknown; meta?: { driverAdapterError?: unknown } };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || PG_CODES.has(e.code) || PRISMA_CODES.has(e.code))) return true;
  if (typeof e.kind === 'string' && ADAPTER_KINDS.has(e.kind)) return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  return isDatabaseUnavailable(e.cause, depth + 1) || isDatabaseUnavailable(e.meta?.driverAdapterError, depth + 1);
}

/** What the API tells a client to wait before repeating a request refused during an outage. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;
