import type { ClientBase } from 'pg';

/** The SQL of failover: whether a server accepts writes (a primary), as libpq's target_session_attrs=read-write asks. */
export async function acceptsWrites(client: ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
  return rows[0]?.standby === false;
}
