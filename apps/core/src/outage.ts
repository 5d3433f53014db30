import { PrismaClientInitializationError, PrismaClientKnownRequestError } from '@prisma/client/runtime/client';
import { CONNECTION_CLOSED_ERROR_MSG, ConnectionClosedError, ErrorCode } from 'bullmq';
import { ReplyError } from 'ioredis';
import { MaxRetriesPerRequestError } from 'ioredis/built/errors';
import ClusterAllFailedError from 'ioredis/built/errors/ClusterAllFailedError';
import { DatabaseError } from 'pg';
import { logger } from './logger';

/*
 * Outages are told by the error's class and code, never by free text: a dependency's own words change between
 * versions and languages (lc_messages), a class or a code does not.
 */

/** Node's system error codes of a connection that could not be made or was lost (pg and ioredis pass them on). */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/**
 * SQLSTATE of pg's DatabaseError: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections (the adapter's
 * TooManyConnections below), and the whole connection_exception class (08). PgBouncer reports every failure of its own
 * as 08P01 (protocol_violation, its `disconnect_client` default): "server login has been failing", "server conn
 * crashed?", "query_wait_timeout", all a database that is away or not answering behind it.
 */
const PG_CODES = new Set(['57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006', '08007', '08P01']);
/** Prisma's error codes: can't reach the server, timed out, operations timed out, server closed the connection, pool timeout */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024']);
/** `kind` of the driver adapter's error (@prisma/adapter-pg convertDriverError), under a Prisma error's meta */
const ADAPTER_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TooManyConnections']);
/** ioredis's ReplyError: Redis's error prefix (the reply's first word, RESP's "error prefix") of a server not serving */
const REDIS_REPLY_CODES = new Set(['LOADING', 'READONLY', 'CLUSTERDOWN', 'MASTERDOWN']);
/** BullMQ's codes (its `finishedErrors` sets `code`) of a job whose keys or lock Redis no longer has */
const BULLMQ_STATE_CODES = new Set<unknown>([ErrorCode.JobNotExist, ErrorCode.JobLockNotExist, ErrorCode.JobLockMismatch]);

/**
 * The one exception to deciding by class and code: errors that the libraries make as a plain `Error` with nothing but
 * their words (no class of their own, no code, no property). Matched only on a plain Error, by its whole text or, where
 * the library appends an id or a delay, by the text's start.
 */
const LIBRARY_TEXTS: { outage: 'postgres' | 'redis' | 'redis-state'; text: string; prefix?: true }[] = [
  // pg 8.23 lib/client.js:204, the server's socket ended under a client (Postgres stopped, a proxy or network cut)
  { outage: 'postgres', text: 'Connection terminated unexpectedly' },
  // pg 8.23 lib/client.js:767, a statement given to a client whose connection failed
  { outage: 'postgres', text: 'Client has encountered a connection error and is not queryable' },
  // ioredis 6.0 built/Redis.js:406, a command on a connection without offline queue (our producers') while it is down
  { outage: 'redis', text: "Stream isn't writeable and enableOfflineQueue options is false" },
  // ioredis 6.0 built/utils/index.js:375 CONNECTION_CLOSED_ERROR_MSG, which ioredis and BullMQ themselves compare to
  { outage: 'redis', text: CONNECTION_CLOSED_ERROR_MSG },
  // ioredis 6.0 built/connectors/SentinelConnector/index.js:58-59, every sentinel tried and none answered
  { outage: 'redis', text: 'All sentinels are unreachable', prefix: true },
  // BullMQ 6.7 dist/cjs/classes/lock-manager.js:44, emitted after its 'lockRenewalFailed' event, without a code
  { outage: 'redis-state', text: 'could not renew lock for job ', prefix: true },
];

function libraryText(err: object): (typeof LIBRARY_TEXTS)[number]['outage'] | undefined {
  if (Object.getPrototypeOf(err) !== Error.prototype) return undefined;
  const message = (err as Error).message;
  return LIBRARY_TEXTS.find((t) => (t.prefix ? message.startsWith(t.text) : message === t.text))?.outage;
}

const hasNetworkCode = (err: object) => NETWORK_CODES.has((err as { code?: unknown }).code as string);

/** The driver adapter's error under a Prisma error: `{kind, code?}` (Prisma's docs: meta.driverAdapterError.cause). */
function adapterCauseUnavailable(cause: unknown): boolean {
  const c = cause as { kind?: unknown; code?: unknown } | undefined;
  return ADAPTER_KINDS.has(c?.kind as string) || (c?.kind === 'postgres' && PG_CODES.has(c.code as string));
}

/**
 * Whether an error says Postgres is unreachable or going away (stopped, restarting, connection dropped), rather than
 * refusing this statement: such a request may be repeated as it is, so the API answers 503 with Retry-After, and a
 * worker keeps what it could not write and tries again.
 */
export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  if (err instanceof DatabaseError) return PG_CODES.has(err.code!);
  if (err instanceof PrismaClientKnownRequestError) {
    return PRISMA_CODES.has(err.code) || adapterCauseUnavailable((err.meta?.driverAdapterError as { cause?: unknown } | undefined)?.cause);
  }
  if (err instanceof PrismaClientInitializationError) return PRISMA_CODES.has(err.errorCode!);
  if (hasNetworkCode(err) || libraryText(err) === 'postgres') return true;
  // a wrapper (an AggregateError of several addresses, an Error with a cause)
  const { cause, errors } = err as { cause?: unknown; errors?: unknown };
  return isDatabaseUnavailable(cause, depth + 1) || (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1)));
}

/**
 * Redis did not answer a request's call within its deadline (redis.ts withinRedisDeadline): a Redis that hangs (stopped,
 * swapping, a network that drops packets) is away for the request as much as one that refuses connections.
 */
export class RedisNoAnswer extends Error {
  constructor(readonly ms: number) {
    super(`no answer from Redis within ${ms} ms`);
    this.name = 'RedisNoAnswer';
  }
}

/** Whether an error of a Redis client or BullMQ says the connection is down (not a command refused), or hangs. */
export function isRedisConnectionError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  if (err instanceof ReplyError) return REDIS_REPLY_CODES.has((err as Error).message.split(' ', 1)[0]!);
  return (
    err instanceof RedisNoAnswer ||
    err instanceof MaxRetriesPerRequestError ||
    err instanceof ClusterAllFailedError ||
    err instanceof ConnectionClosedError ||
    hasNetworkCode(err) ||
    libraryText(err) === 'redis'
  );
}

/**
 * Whether a BullMQ worker error says Redis lost a job's keys or lock (Redis restarted empty, or failed over to a replica
 * that had not got them): the aftermath of an outage, whose work the reconciler rebuilds from Postgres.
 */
export function isRedisStateLost(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  return BULLMQ_STATE_CODES.has((err as { code?: unknown }).code) || libraryText(err) === 'redis-state';
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
  private readonly notes = new Map<string, Record<string, unknown>>();

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
    const detail = this.notes.get(dependency);
    this.notes.delete(dependency);
    logger.info({ dependency, awayMs: Date.now() - since, ...detail }, `${dependency} is back`);
  }

  /** What the line of the dependency's return says besides (the primary a failover moved to), kept while it is away. */
  note(dependency: string, detail: Record<string, unknown>): void {
    if (this.downSince.has(dependency)) this.notes.set(dependency, detail);
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
