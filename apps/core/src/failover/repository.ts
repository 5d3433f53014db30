import type { ClientBase } from 'pg';

/**
 * The SQL of failover: whether a server accepts writes, as libpq's target_session_attrs=read-write asks: not a standby
 * (`pg_is_in_recovery()`), and not read-only by setting. pg_auto_failover promotes a standby in two steps: out of
 * recovery first, its sessions still read-only (`default_transaction_read_only`) until the monitor gives up on the old
 * primary; a connection made then would fail every write.
 */
export async function acceptsWrites(client: ClientBase): Promise<boolean> {
  const { rows } = await client.query<{ standby: boolean }>("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only')::bool AS standby");
  return rows[0]?.standby === false;
}
