import { db } from '../../apps/core/src/db';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { guardedKinds } from '../../apps/core/src/delivery/guards';
import crypto from 'node:crypto';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { CLAIM_UNGUARDED, MARK_SENT, markEnqueued } from '../../apps/core/src/delivery/repository';
import { idFloor, idSpan } from '../../apps/core/src/ids';
import { makeTenant } from '../helpers/factories';
import { writtenCopies } from './helpers';

async function queuedMessages(n: number): Promise<string[]> {
  const tenant = await makeTenant();
  return [...(await writtenCopies(tenant, Array.from({ length: n }, (_, i) => `c${i}@example.org`))).values()];
}

// a worker process's claims (createDelivery makes one for each)
const claims = new FastClaims(db(), deliveryRegistrations().kinds);
const claimUnguarded = (id: string) => claims.claimUnguarded(id, 60_000, guardedKinds(deliveryRegistrations().kinds.guards));

describe('delivery claims and "sent" marks shared by concurrent deliveries', () => {
  it('gives a row asked for twice in one batch to one asker only', async () => {
    const [filler, contested] = await queuedMessages(2);
    // the three calls arrive within the claim's wait for company and share one statement
    const [first, a, b] = await Promise.all([claimUnguarded(filler!), claimUnguarded(contested!), claimUnguarded(contested!)]);
    expect(first?.id).toBe(filler);
    expect([a?.id ?? null, b?.id ?? null].filter(Boolean)).toEqual([contested]);
    const row = await db().message.findUniqueOrThrow({ where: { id: contested! } });
    expect(row.status).toBe('sending');
    expect(row.attempts).toBe(1);
  });

  it('claims many rows at once, each with its mailbox and Send, and marks each sent with its own answer', async () => {
    const ids = await queuedMessages(12);
    const claimed = await Promise.all(ids.map((id) => claimUnguarded(id)));
    expect(claimed.map((c) => c?.id)).toEqual(ids);
    expect(claimed.every((c) => c!.mailbox.address.startsWith('sender-') && c!.send?.subject === 'Batch')).toBe(true);
    expect(await Promise.all(ids.map((id) => claimUnguarded(id)))).toEqual(ids.map(() => null));

    // the marks wait for company: one statement for all twelve
    const marks = claims.stats.marks;
    await Promise.all(ids.map((id, i) => claims.markSent({ id, kind: 'transactional' }, `250 ok ${i}`)));
    expect(claims.stats.marks - marks).toBe(1);
    const rows = await db().message.findMany({ where: { id: { in: ids } } });
    expect(rows.every((r) => r.status === 'sent' && r.lockedUntil === null && r.sentAt)).toBe(true);
    expect(new Map(rows.map((r) => [r.id, r.smtpResponse]))).toEqual(new Map(ids.map((id, i) => [id, `250 ok ${i}`])));
  });
});

describe('the plans of the claim and the "sent" mark', () => {
  /**
   * Both find their rows by primary key. Prepared, their generic plan could AND that with a walk of the status index
   * (every queued row, every dead entry), which cost the bench hundreds of buffers a statement. With Postgres choosing
   * the generic plan, neither may touch the status index.
   */
  it.each([
    ['the claim', CLAIM_UNGUARDED, (id: string) => `array['${id}']::uuid[], 60000, '{}'::text[], 'plan-probe', '${id}', '${id}'`],
    ['the "sent" mark', MARK_SENT, (id: string) => `array['${id}']::uuid[], array['250 ok']`],
  ])('%s reads no status index in its generic plan', async (_name, sql, args) => {
    await queuedMessages(30); // queued rows for the status index to hold
    const plan = await db().$transaction(async (tx) => {
      await tx.$executeRawUnsafe('SET LOCAL plan_cache_mode = force_generic_plan');
      // the test's tables are small enough to scan whole; the choice that matters is between the indexes
      await tx.$executeRawUnsafe('SET LOCAL enable_seqscan = off');
      await tx.$executeRawUnsafe(`PREPARE plan_probe AS ${sql}`);
      try {
        const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN EXECUTE plan_probe(${args(crypto.randomUUID())})`);
        return rows.map((r) => r['QUERY PLAN']).join('\n');
      } finally {
        await tx.$executeRawUnsafe('DEALLOCATE plan_probe');
      }
    });
    // messages is partitioned (docs/partitions.md): each partition's own primary key, and no partition's status index
    expect(plan).toMatch(/messages_(p\d+|default)_pkey/);
    expect(plan).not.toMatch(/messages_\w*status_not_before_idx/);
  });

  /**
   * The claim names its rows by a parameter array, which Postgres does not prune by: without the span of the ids beside
   * it, its generic plan read the primary key of every partition for each id (16 after a year of months: delivery at
   * 0.64 of its speed on 50,000,000 emails). With it, the partitions outside the span are removed when it starts.
   */
  it('the claim reads only the partitions its ids fall in, in its generic plan', async () => {
    const [id] = await queuedMessages(1);
    const partitions = await db().$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'messages'::regclass`);
    expect(partitions[0]!.n).toBeGreaterThan(2);
    // EXPLAIN ANALYZE runs the claim: the transaction is rolled back by throwing its plan
    const rolledBack = await db()
      .$transaction(async (tx) => {
        await tx.$executeRawUnsafe('SET LOCAL plan_cache_mode = force_generic_plan');
        await tx.$executeRawUnsafe(`PREPARE prune_probe AS ${CLAIM_UNGUARDED}`);
        const [lo, hi] = idSpan([id!]);
        const rows = await tx.$queryRawUnsafe<{ 'QUERY PLAN': string }[]>(
          `EXPLAIN (ANALYZE, COSTS OFF) EXECUTE prune_probe(array['${id}']::uuid[], 60000, '{}'::text[], 'plan-probe', '${lo}', '${hi}')`,
        );
        await tx.$executeRawUnsafe('DEALLOCATE prune_probe'); // a prepared statement outlives its transaction
        throw { plan: rows.map((r) => r['QUERY PLAN']).join('\n') };
      })
      .catch((thrown: unknown) => thrown as { plan?: string });
    const plan = rolledBack.plan!;
    expect(plan).toMatch(/Subplans Removed: \d+/);
    expect(plan.match(/Index (Only )?Scan using messages_\w+_pkey/g)).toHaveLength(1);
  });
});

describe('statements that name messages by an array of ids', () => {
  it('find ids in different partitions, the default one included', async () => {
    const [recent, old] = await queuedMessages(2);
    // a row of seventy days ago: another partition than the current one's, or the default one
    const moved = idFloor(Date.now() - 70 * 86_400_000).replace(/0{12}$/, old!.slice(-12));
    await db().$executeRawUnsafe(`UPDATE messages SET id = $1::uuid WHERE id = $2::uuid`, moved, old);
    const claimed = await Promise.all([claimUnguarded(recent!), claimUnguarded(moved)]);
    expect(claimed.map((c) => c?.id)).toEqual([recent, moved]);
    await markEnqueued(db(), [moved, recent!]);
    const rows = await db().message.findMany({ where: { id: { in: [recent!, moved] } } });
    expect(rows.map((r) => [r.status, r.enqueuedAt !== null])).toEqual([
      ['sending', true],
      ['sending', true],
    ]);
  });

  it('spans ids written in the canonical form, and all ids when one is written otherwise', () => {
    const a = '0190a000-0000-7000-8000-000000000001';
    const b = '0190b000-0000-7000-8000-000000000002';
    expect(idSpan([b, a])).toEqual([a, b]);
    expect(idSpan([a, b.toUpperCase()])).toEqual(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff']);
    expect(idSpan([])).toEqual(['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff']);
  });
});
