import { rawQuery, type Db } from '../db';

/**
 * The SQL of read replicas: how far a server's data is behind its primary, in seconds. 0 on a primary, and on a
 * standby that has replayed all it received (an idle primary sends nothing: the last replayed transaction's age would
 * count the idle time); else the age of the last transaction replayed. Null before any was.
 */
export async function replayLagSeconds(db: Db): Promise<number | null> {
  const [row] = await rawQuery<{ lag: number | null }>(
    db,
    `SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0
                 WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                 ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END AS lag`,
  );
  return row?.lag ?? null;
}
