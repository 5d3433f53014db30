import crypto from 'node:crypto';
import type { Prisma } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { AppError, BadRequest, Conflict, Unprocessable } from '../errors';
import { logger } from '../logger';
import { isDatabaseUnavailable } from '../outage';
import { insertRecordIfAbsent, insertRecordsIfAbsent, type IdempotencyScope } from './repository';

export type { IdempotencyScope } from './repository';

/**
 * Idempotency-Key on every write of the public API (docs/api.md and docs/idempotency.md): one set of rules for /send and the
 * subscriber and prospect writes. A key is scoped per API key AND per route, so the same key on two routes are two
 * requests. /send folds the `done` marking into its one accept statement (sending/write.ts); the other writes go
 * through the API's `idempotent` middleware, which calls the functions below.
 */

/** docs/api.md: a key's answer is replayed for 24 hours. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/**
 * A record still `processing` after this long belongs to a request that died before its transaction committed
 * (the record turns `done` in that same transaction), so nothing was sent: a new request may take the key over.
 * (A request that ended in a refusal or a fault frees its key at once, or as soon as Postgres takes the release.)
 */
export const ABANDONED_AFTER_MS = 30_000;
/** A 409 for a key still being processed says to come back after this many seconds. */
export const IN_PROGRESS_RETRY_AFTER_SECONDS = 1;
/** A release Postgres could not take is tried again this often, for as long as a record could stay abandoned. */
const RELEASE_RETRY_MS = 1_000;

/** `Idempotency-Key`: 1 to 200 printable ASCII characters, or absent. */
export function parseIdempotencyKey(header: string | undefined): string | null {
  if (header === undefined) return null;
  if (!/^[\x20-\x7e]{1,200}$/.test(header)) throw new BadRequest('Idempotency-Key must be 1 to 200 printable ASCII characters');
  return header;
}

/** JSON with object keys sorted at every level, so key order and whitespace do not change the fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 of the canonical request body. */
export function requestFingerprint(body: unknown): string {
  return crypto.createHash('sha256').update(canonical(body ?? null)).digest('hex');
}

const inProgress = { 'Retry-After': String(IN_PROGRESS_RETRY_AFTER_SECONDS) };

export type IdempotentStart = { kind: 'new'; recordId: number } | { kind: 'replay'; status: number; body: unknown };

/**
 * Takes the key for this request (an insert that only one of many parallel requests wins), or answers from an earlier
 * one: the stored answer for the same body, 422 for another body, 409 while the first is still being processed.
 */
export async function startIdempotent(db: Tx, scope: IdempotencyScope, fingerprint: string): Promise<IdempotentStart> {
  for (let round = 0; round < 3; round++) {
    const taken = await insertRecordIfAbsent(db, scope, fingerprint, new Date(Date.now() + IDEMPOTENCY_TTL_MS));
    if (taken !== null) return { kind: 'new', recordId: taken };
    const earlier = await earlierAnswer(db, scope, fingerprint);
    if (earlier) return earlier;
  }
  throw keyChangingHands();
}

/** 409 for a key freed and taken again by others while this request tried to take it three times. */
export function keyChangingHands(): Conflict {
  return new Conflict('the Idempotency-Key is changing hands; repeat the request in a moment', inProgress);
}

/**
 * What the record holding a key answers: the stored answer for the same body, 422 for another body, 409 while its
 * request is still being processed; null once there is none (it was deleted, or it expired or was abandoned and is
 * deleted now): the key is free to take again. `doneWithSend`: a record that carries its send's answer from the start
 * (a submitted message's, sending/repository.ts WRITE_CLAIMED_SENDS) is done once that send exists.
 */
export async function earlierAnswer(db: Tx, scope: IdempotencyScope, fingerprint: string, options: { doneWithSend?: boolean } = {}): Promise<{ kind: 'replay'; status: number; body: unknown } | null> {
  const { apiKeyId, route, key } = scope;
  const earlier = await db.idempotencyRecord.findUnique({ where: { apiKeyId_route_key: { apiKeyId, route, key } } });
  if (!earlier) return null;
  const now = Date.now();
  if (earlier.state === 'processing' && options.doneWithSend && (await sendWritten(db, earlier.responseBody))) earlier.state = 'done';
  const abandoned = earlier.state === 'processing' && now - earlier.createdAt.getTime() > ABANDONED_AFTER_MS;
  if (earlier.expiresAt.getTime() <= now || abandoned) {
    await db.idempotencyRecord.deleteMany({ where: { id: earlier.id, state: earlier.state } });
    return null;
  }
  if (earlier.fingerprint !== fingerprint) {
    throw new Unprocessable('this Idempotency-Key was already used with a different request');
  }
  if (earlier.state === 'processing') {
    throw new Conflict('a request with this Idempotency-Key is still being processed; repeat it in a moment', inProgress);
  }
  return { kind: 'replay', status: earlier.responseStatus ?? 202, body: earlier.responseBody };
}

/** Whether the send an answer names (`{id}`) was written. */
async function sendWritten(db: Tx, body: unknown): Promise<boolean> {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' && (await db.send.count({ where: { id } })) > 0;
}

/**
 * startIdempotent for the keys of one request (a batch's messages, batches/index.ts): the free ones taken in one insert;
 * a key already taken, or repeated in the list, goes through startIdempotent alone. Each claim's answer is its start,
 * or its refusal (409 while the first is in flight, 422 for another body) for the caller to report.
 */
export async function startIdempotentAll(db: Db, claims: { scope: IdempotencyScope; fingerprint: string }[]): Promise<(IdempotentStart | AppError)[]> {
  const keys = claims.map(({ scope }) => `${scope.apiKeyId} ${scope.route} ${scope.key}`);
  const first = keys.map((key, i) => keys.indexOf(key) === i);
  const ids = claims.length ? await insertRecordsIfAbsent(db, claims.filter((_, i) => first[i]), new Date(Date.now() + IDEMPOTENCY_TTL_MS)) : [];
  const starts: (IdempotentStart | AppError)[] = [];
  let next = 0;
  for (let i = 0; i < claims.length; i++) {
    const taken = first[i] ? ids[next++] : null;
    if (taken != null) {
      starts.push({ kind: 'new', recordId: taken });
      continue;
    }
    try {
      starts.push(await startIdempotent(db, claims[i]!.scope, claims[i]!.fingerprint));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      starts.push(err);
    }
  }
  return starts;
}

/** Stores the accepted answer; /send calls it in the transaction that writes the messages, so both commit or neither. */
export async function finishIdempotent(db: Tx, recordId: number, status: number, body: unknown): Promise<void> {
  await db.idempotencyRecord.updateMany({
    where: { id: recordId },
    data: { state: 'done', responseStatus: status, responseBody: body as Prisma.InputJsonValue },
  });
}

/**
 * Frees the key after a refusal or a fault: only accepted requests are remembered. When Postgres is away (the request
 * failed because of it), the release is tried again every second until it lands, so the client's retry after the
 * outage finds the key free instead of a 409 until the record counts as abandoned. Never throws.
 */
export async function releaseIdempotent(db: Tx, recordId: number, until = Date.now() + ABANDONED_AFTER_MS): Promise<void> {
  try {
    await db.idempotencyRecord.deleteMany({ where: { id: recordId, state: 'processing' } });
  } catch (err) {
    if (!isDatabaseUnavailable(err) || Date.now() >= until) {
      logger.warn({ err: (err as Error).message, record: recordId }, 'could not free an Idempotency-Key; it is taken over once abandoned');
      return;
    }
    setTimeout(() => void releaseIdempotent(db, recordId, until), RELEASE_RETRY_MS).unref();
  }
}

/** Maintenance: forget answers older than 24 hours. */
export async function deleteExpiredIdempotency(db: Tx, now = new Date()): Promise<number> {
  const { count } = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
  return count;
}
