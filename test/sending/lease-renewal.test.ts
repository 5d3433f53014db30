import { Client } from 'pg';
import { db } from '../../apps/core/src/db';
import { renewLeases } from '../../apps/core/src/delivery/repository';
import { makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';
import { insertMessage } from './helpers';

/**
 * The heartbeat's lease renewal never waits for a row lock: a row another statement holds (a "sent" mark in flight) is
 * left to the next beat. Waiting could deadlock with a mark taking the same rows in another order (it did under load).
 */
it('renews the leases of the rows no one else has locked, without waiting for the one being marked', async () => {
  const tenant = await makeTenant({ smtp: 'smtp://127.0.0.1:1' });
  const ids = [(await insertMessage(tenant, 'held-a@example.org')).id, (await insertMessage(tenant, 'held-b@example.org')).id];
  const before = new Date(Date.now() + 1_000);
  await db().message.updateMany({ where: { id: { in: ids } }, data: { status: 'sending', lockedUntil: before } });

  const marker = new Client({ connectionString: process.env.DATABASE_URL });
  await marker.connect();
  try {
    await marker.query('BEGIN');
    await marker.query('SELECT id FROM messages WHERE id = $1 FOR UPDATE', [ids[0]]);
    const renewing = renewLeases(db(), ids, 60_000).then(() => 'renewed' as const);
    // the renewal either finishes or is found waiting on the lock
    const waiting = waitFor(async () => {
      await marker.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await marker.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      return rows[0].n > 0 ? ('waited for the lock' as const) : undefined;
    }, { timeout: 30_000, what: 'the renewal to finish or wait' });
    expect(await Promise.race([renewing, waiting])).toBe('renewed');
    const rows = await db().message.findMany({ where: { id: { in: ids } } });
    const lease = (id: string) => rows.find((r) => r.id === id)!.lockedUntil!.getTime();
    expect(lease(ids[0]!)).toBe(before.getTime());
    expect(lease(ids[1]!)).toBeGreaterThan(Date.now() + 30_000);
  } finally {
    await marker.query('ROLLBACK');
    await marker.end();
  }
});
