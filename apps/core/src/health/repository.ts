import type { Db } from '../db';

/** The SQL of the readiness check (GET /readyz): whether Postgres answers at all. */

/** Runs `SELECT 1`: resolves when Postgres answers, rejects when it does not. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}
