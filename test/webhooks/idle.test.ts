import { db } from '../../apps/core/src/db';
import { dispatchEvents, type DispatchStats } from '../../apps/core/src/webhooks/dispatch';
import { PENDING_STATEMENT } from '../../apps/core/src/webhooks/repository';
import { makeAccount } from '../helpers/factories';

/**
 * The worker's fan-out looks four times a second whether or not anything happened. A pass that finds no event waiting
 * costs one statement on the pool; only a pass with work opens the transaction that claims, queues and marks.
 */
describe('the fan-out when nothing waits', () => {
  it('runs no transaction while no event waits, and dispatches an event as soon as one does', async () => {
    const stats: DispatchStats = { transactions: 0 };
    for (let i = 0; i < 3; i++) expect(await dispatchEvents(db(), { stats })).toBe(0);
    expect(stats.transactions).toBe(0);

    const account = await makeAccount();
    const event = await db().event.create({ data: { accountId: account.id, type: 'message.sent', data: { message_id: 'x' } } });
    expect(await dispatchEvents(db(), { stats })).toBe(1);
    expect(stats.transactions).toBe(1);
    expect((await db().event.findUniqueOrThrow({ where: { id: event.id } })).dispatchedAt).not.toBeNull();

    expect(await dispatchEvents(db(), { stats })).toBe(0);
    expect(stats.transactions).toBe(1);
  });

  it('finds waiting events through the index, whatever the number of events already dispatched', async () => {
    // with sequential scans priced out, the plan shows whether the index can answer the statement at all
    const plan = await db().$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
      return tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (COSTS OFF) ${PENDING_STATEMENT}`);
    });
    const text = plan.map((r) => r['QUERY PLAN']).join('\n');
    // events is partitioned (docs/partitions.md): each partition's copy of the index, read only (a new partition's
    // visibility map is empty, so the planner may take a bitmap scan of the waiting rows instead of an index-only scan)
    expect(text).toMatch(/(Index Only Scan using|Bitmap Index Scan on) events_\w*dispatched_at_created_at_idx/);
    expect(text).not.toMatch(/Seq Scan/);
    expect(text).toMatch(/Index Cond: \(dispatched_at IS NULL\)/);
  });
});
