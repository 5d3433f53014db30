import type { Tx } from '../db';

/** The SQL of Idempotency-Key records (the rest of their reads and writes are Prisma's typed queries in index.ts). */

/** Whose key it is: the API key, the write (method and path, e.g. `POST /send`), and the Idempotency-Key itself. */
export interface IdempotencyScope {
  apiKeyId: number;
  route: string;
  key: string;
}

/**
 * Inserts the `processing` record of the key unless one exists (an insert only one of many parallel requests wins);
 * returns its id, or null when the key was taken.
 */
export async function insertRecordIfAbsent(db: Tx, scope: IdempotencyScope, fingerprint: string, expiresAt: Date): Promise<number | null> {
  const { apiKeyId, route, key } = scope;
  const taken = await db.$queryRaw<{ id: number }[]>`
      INSERT INTO idempotency_records (api_key_id, route, key, fingerprint, state, expires_at)
      VALUES (${apiKeyId}, ${route}, ${key}, ${fingerprint}, 'processing', ${expiresAt})
      ON CONFLICT (api_key_id, route, key) DO NOTHING
      RETURNING id`;
  return taken[0]?.id ?? null;
}
