import { rawQuery, type Db, type Tx } from '../db';

/** The SQL of Idempotency-Key records (the rest of their reads and writes are Prisma's typed queries in index.ts). */

/** Whose key it is: the API key, the write (method and path, e.g. `POST /send`), and the Idempotency-Key itself. */
export interface IdempotencyScope {
  apiKeyId: number;
  route: string;
  key: string;
}

/**
 * Inserts the `processing` record of the key unless one exists (an insert only one of many parallel requests wins);
 * returns its id, or null when the key was taken. `answer`: what the record answers once its send exists (a submitted
 * message's, which the record carries from the start: sending/repository.ts WRITE_CLAIMED_SENDS takes such keys for live sends).
 */
export async function insertRecordIfAbsent(db: Tx, scope: IdempotencyScope, fingerprint: string, expiresAt: Date, answer?: { status: number; body: unknown }): Promise<number | null> {
  const { apiKeyId, route, key } = scope;
  const body = answer ? JSON.stringify(answer.body) : null;
  const taken = await db.$queryRaw<{ id: number }[]>`
      INSERT INTO idempotency_records (api_key_id, route, key, fingerprint, state, expires_at, response_status, response_body)
      VALUES (${apiKeyId}, ${route}, ${key}, ${fingerprint}, 'processing', ${expiresAt}, ${answer?.status ?? null}::int, ${body}::jsonb)
      ON CONFLICT (api_key_id, route, key) DO NOTHING
      RETURNING id`;
  return taken[0]?.id ?? null;
}

/**
 * insertRecordIfAbsent for many keys in one statement (and one commit): for each, the id of the `processing` record
 * inserted, or null when its key was taken. The keys of one call are distinct.
 */
export async function insertRecordsIfAbsent(db: Db, claims: { scope: IdempotencyScope; fingerprint: string }[], expiresAt: Date): Promise<(number | null)[]> {
  const rows = await rawQuery<{ id: number; ord: number }>(
    db,
    `WITH wanted AS (
       SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS w(api_key_id, route, key, fingerprint, ord)
     ), taken AS (
       INSERT INTO idempotency_records (api_key_id, route, key, fingerprint, expires_at)
       SELECT api_key_id, route, key, fingerprint, $5::timestamptz FROM wanted ORDER BY ord
       ON CONFLICT (api_key_id, route, key) DO NOTHING
       RETURNING id, api_key_id, route, key
     )
     SELECT t.id, w.ord::int FROM taken t JOIN wanted w USING (api_key_id, route, key)`,
    [claims.map((c) => c.scope.apiKeyId), claims.map((c) => c.scope.route), claims.map((c) => c.scope.key), claims.map((c) => c.fingerprint), expiresAt],
    'claim-idempotency-keys',
  );
  const ids = claims.map((): number | null => null);
  for (const row of rows) ids[row.ord - 1] = row.id;
  return ids;
}
