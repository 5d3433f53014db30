import { logger } from './logger';
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

/** Whether an error of a Redis client or BullMQ says the connection is down (not a command refused). */
export function isRedisConnectionError(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  return (
    (typeof e?.code === 'string' && NETWORK_CODES.has(e.code)) ||
    (typeof e?.message === 'string' &&
      /Connection is closed|connect E\w+|Stream isn't writeable|MaxRetriesPerRequest|All sentinels are unreachable|Failed to refresh slots cache|CLUSTERDOWN|READONLY You can't write against a read only replica|LOADING Redis is loading/i.test(e.message))
  );
}

/**
 * Whether a BullMQ worker error says Redis lost a job's keys or lock (Redis restarted empty, or failed over to a replica
 * that had not got them): the aftermath of an outage, whose work the reconciler rebuilds from Postgres.
 */
export function isRedisStateLost(err: unknown): boolean {
  const message = (err as { message?: unknown })?.message;
  return typeof message === 'string' && /Missing key for job|Missing lock for job|could not renew lock|Lock mismatch/i.test(message);
}

/** What the API tells a client to wait before repeating a request refused during an outage. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/**
 * One line at warn when a dependency (Postgres, Redis, a mailbox's SMTP server) goes away and one at info when it is
 * back, with how long it was away: not a stack per failed statement or reconnection attempt, nor a line per request or
 * job it failed (docs/reliability.md, "Logs"). Fed by the pool's and the Redis clients' connection events, the API's
 * 503s, the worker's loops and its SMTP conversations; one per process.
 */
export class DependencyWatch {
  private readonly downSince = new Map<string, number>();
  private readonly backAt = new Map<string, number>();

  down(dependency: string, err?: unknown): void {
    if (this.downSince.has(dependency)) return;
    this.downSince.set(dependency, Date.now());
    logger.warn({ dependency, err: err instanceof Error ? err.message : undefined }, `${dependency} is unreachable; waiting for it`);
  }

  up(dependency: string): void {
    const since = this.downSince.get(dependency);
    if (since === undefined) return;
    this.downSince.delete(dependency);
    this.backAt.set(dependency, Date.now());
    logger.info({ dependency, awayMs: Date.now() - since }, `${dependency} is back`);
  }

  isDown(dependency: string): boolean {
    return this.downSince.has(dependency);
  }

  /** Whether the dependency is away, or came back within `withinMs` (what follows an outage is part of it). */
  wasAway(dependency: string, withinMs = AFTERMATH_MS): boolean {
    return this.downSince.has(dependency) || Date.now() - (this.backAt.get(dependency) ?? -Infinity) <= withinMs;
  }
}

/** How long after a dependency's return the errors it left behind (a job's lost lock) still count as the outage's. */
const AFTERMATH_MS = 120_000;

export const dependencies = new DependencyWatch();

/**
 * For a loop that tries again (a dispatcher pass, a housekeeping tick, a lease renewal): an error that only says Postgres
 * or Redis is away goes to the dependency watch (one line for the whole outage) and answers true; any other answers
 * false, for the caller to log.
 */
export function noteOutage(err: unknown): boolean {
  if (isDatabaseUnavailable(err)) dependencies.down('postgres', err);
  else if (isRedisConnectionError(err)) dependencies.down('redis', err);
  else return false;
  return true;
}
