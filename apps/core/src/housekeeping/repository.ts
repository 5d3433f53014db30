import type { Tx } from '../db';

/** The SQL of housekeeping: the advisory lock that lets one worker at a time run a task. */

/** Takes the transaction-scoped advisory lock of the task if no other session holds it; whether it was taken. */
export async function tryTaskLock(tx: Tx, name: string): Promise<boolean> {
  const [lock] = await tx.$queryRaw<{ taken: boolean }[]>`SELECT pg_try_advisory_xact_lock(hashtext(${`housekeeping:${name}`})) AS taken`;
  return lock?.taken ?? false;
}
