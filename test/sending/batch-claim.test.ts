import { db } from '../../apps/core/src/db';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { guardedKinds } from '../../apps/core/src/delivery/guards';
import crypto from 'node:crypto';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { CLAIM_UNGUARDED, MARK_SENT } from '../../apps/core/src/delivery/repository';
import { makeTenant } from '../helpers/factories';
import { writtenCopies } from './helpers';

async function queuedMessages(n: number): Promise<string[]> {
  const tenant = await makeTenant();
  return [...(await writtenCopies(tenant, Array.from({ length: n }, (_, i) => `c${i}@example.org`))).values()];
}

describe('delivery claims and "sent" marks shared by concurrent deliveries', () => {
  // a worker process's claims (createDelivery makes one for each)
  const claims = new FastClaims(db(), deliveryRegistrations().kinds);
  const claimUnguarded = (id: string) => claims.claimUnguarded(id, 60_000, guardedKinds(deliveryRegistrations().kinds.guards));

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
    ['the claim', CLAIM_UNGUARDED, (id: string) => `array['${id}']::uuid[], 60000, '{}'::text[], 'plan-probe'`],
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
});
