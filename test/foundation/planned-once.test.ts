import { config } from '../../apps/core/src/config';
import { closeClient, createDb, db, rawQuery, type Db } from '../../apps/core/src/db';
import { writeSends } from '../../apps/core/src/sending/write';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { guardedKinds } from '../../apps/core/src/delivery/guards';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { fastAddRows } from '../../apps/core/src/subscribers/repository';
import { makeList, makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';
import { sendToWrite, writtenCopies } from '../sending/helpers';

/**
 * db.ts planOnce: the accept and sign-up statements, and the worker's claim and "sent" mark, keep one plan per
 * connection; nothing else is planned that way.
 */
describe('statements planned once', () => {
  const mode = async (client: Db, plan: 'once' | 'chosen') =>
    (await rawQuery<{ mode: string }>(client, "SELECT current_setting('plan_cache_mode') AS mode", [], `plan-mode-${plan}`, plan))[0]!.mode;

  /** The plans of a named statement on the connection that ran it: the pool hands back the one released last. */
  const plansOf = async (name: string) =>
    (
      await rawQuery<{ generic: number; custom: number }>(
        db(),
        'SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1',
        [name],
        'plans-of',
        'once',
      )
    )[0];

  it('runs lone sends one after another on one plan, never planning the statement again', async () => {
    const tenant = await makeTenant();
    // a lone send at a time, as a client that waits for each answer sends: Postgres's own choice planned each anew
    for (let i = 0; i < 8; i++) {
      const [written] = await writeSends(db(), [sendToWrite(tenant, [`lone${i}@example.org`])]);
      expect(written!.kept).toHaveLength(1);
    }
    const plans = await plansOf('write-sends');
    expect(plans?.custom).toBe(0);
    expect(plans?.generic).toBeGreaterThanOrEqual(8);
  });

  it('runs lone sign-ups one after another on one plan too', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    for (let i = 0; i < 8; i++) {
      const add = { accountId: tenant.account.id, listKey: list.key, email: `signup${i}-${list.key.toLowerCase()}@example.org`, name: '', tags: [], fields: {}, confirmed: true };
      expect(await fastAddRows(db(), [add])).toEqual(['active']);
    }
    const plans = await plansOf('fast-add-subscribers');
    expect(plans?.custom).toBe(0);
    expect(plans?.generic).toBeGreaterThanOrEqual(8);
  });

  it("runs a worker's lone claims and \"sent\" marks on one plan each", async () => {
    const tenant = await makeTenant();
    const ids = [...(await writtenCopies(tenant, Array.from({ length: 8 }, (_, i) => `lone-claim${i}@example.org`))).values()];
    const kinds = deliveryRegistrations().kinds;
    const claims = new FastClaims(db(), kinds);
    // one row at a time, as a worker with one delivery in flight claims and marks: Postgres's own choice planned the
    // claim anew whenever a plan for its few ids was estimated cheaper than the kept one
    for (const id of ids) {
      expect((await claims.claimUnguarded(id, 60_000, guardedKinds(kinds.guards)))?.id).toBe(id);
      await claims.markSent({ id, kind: 'transactional' }, '250 ok');
    }
    expect(claims.stats).toEqual({ claims: 8, marks: 8 });
    for (const name of ['claim-unguarded', 'mark-sent']) {
      const plans = await plansOf(name);
      expect(plans?.custom).toBe(0);
      expect(plans?.generic).toBeGreaterThanOrEqual(8);
    }
  });

  it('plans generically only on the connections of those statements: Prisma and the other raw statements choose as Postgres does', async () => {
    expect(await mode(db(), 'once')).toBe('force_generic_plan');
    expect(await mode(db(), 'chosen')).toBe('auto');
    const [prisma] = await db().$queryRawUnsafe<{ mode: string }[]>("SELECT current_setting('plan_cache_mode') AS mode");
    expect(prisma!.mode).toBe('auto');
  });

  it('behind a transaction pooler (no startup options, no named statements) runs them on the one pool, planned each time', async () => {
    const pooled = createDb(config().databaseUrl, 2, true);
    try {
      expect(await mode(pooled, 'once')).toBe('auto');
    } finally {
      await closeClient(pooled);
    }
  });

  it('closes the second pool with its client', async () => {
    const client = createDb(config().databaseUrl, 2, false);
    const [{ pid }] = (await rawQuery<{ pid: number }>(client, 'SELECT pg_backend_pid() AS pid', [], 'backend-pid', 'once')) as [{ pid: number }];
    const alive = async () => (await db().$queryRawUnsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', pid))[0]!.n;
    expect(await alive()).toBe(1);
    await closeClient(client);
    await waitFor(async () => (await alive()) === 0 || null, { what: 'the planned-once connection to end' });
  });
});
