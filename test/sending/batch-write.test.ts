import { db } from '../../apps/core/src/db';
import { requestFingerprint, startIdempotent } from '../../apps/core/src/idempotency';
import { utcDay } from '../../apps/core/src/sending/quota';
import { SEND_ROUTE } from '../../apps/core/src/sending/accept';
import { writeSends } from '../../apps/core/src/sending/write';
import { as, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';
import { sendToWrite } from './helpers';

const ctx = useApi();

const sendOf = (tenant: Tenant, dailyLimit: number, to: string[], idempotencyRecord?: number) => sendToWrite(tenant, to, { dailyLimit, idempotencyRecord });
const addresses = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}@example.org`);
const usage = async (tenant: Tenant) =>
  (await db().keyDailyUsage.findUnique({ where: { apiKeyId_day: { apiKeyId: tenant.keyId, day: utcDay() } } }))?.count ?? 0;

describe('accepted sends written together in one statement', () => {
  it('answers each send of a batch as if it had come alone: limit, order, skipped recipients, idempotent answers', async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    await db().keyDailyUsage.create({ data: { apiKeyId: a.keyId, day: utcDay(), count: 5 } });
    await db().suppression.create({ data: { accountId: b.account.id, email: 'gone@example.org', reason: 'complained' } });
    const record = await startIdempotent(db(), { apiKeyId: b.keyId, route: SEND_ROUTE, key: 'batch-1' }, requestFingerprint({ n: 1 }));
    if (record.kind !== 'new') throw new Error('expected a new idempotency record');

    const sends = [
      sendOf(a, 10, addresses('a-big', 6)), // 5 + 6 would pass 10
      sendOf(b, 100, ['gone@example.org', 'b0@example.org'], record.recordId),
      sendOf(a, 10, addresses('a-small', 3)), // alone after the refused one: 5 + 3 fits
      sendOf(b, 100, ['gone@example.org']), // nobody left to write to
      sendOf(b, 100, addresses('b-more', 3)),
    ];
    const written = await writeSends(db(), sends);

    expect(written.map((w) => w.used)).toEqual([null, 1, 8, null, 4]);
    expect(written.map((w) => w.kept.length)).toEqual([6, 1, 3, 0, 3]);
    expect(written[1]!.skipped).toEqual([{ to: 'gone@example.org', reason: 'complained' }]);
    expect(written[3]!.skipped).toEqual([{ to: 'gone@example.org', reason: 'complained' }]);

    expect(await usage(a)).toBe(8);
    expect(await usage(b)).toBe(4);
    const stored = await db().send.findMany({ where: { id: { in: sends.map((s) => s.sendId) } }, include: { messages: true } });
    expect(stored.map((s) => s.id).sort()).toEqual([sends[1]!.sendId, sends[2]!.sendId, sends[4]!.sendId].sort());
    const second = stored.find((s) => s.id === sends[1]!.sendId)!;
    expect(second.skipped).toEqual([{ to: 'gone@example.org', reason: 'complained' }]);
    expect(second.messages.map((m) => [m.to, m.status, m.messageIdHeader])).toEqual([['b0@example.org', 'queued', `<${m0(written[1]!)}@${b.mailbox.address.split('@')[1]}>`]]);
    expect(stored.find((s) => s.id === sends[4]!.sendId)!.messages.map((m) => m.to).sort()).toEqual(addresses('b-more', 3));

    const answered = await db().idempotencyRecord.findUniqueOrThrow({ where: { id: record.recordId } });
    expect(answered.state).toBe('done');
    expect(answered.responseStatus).toBe(202);
    expect(answered.responseBody).toEqual({
      ok: true,
      id: sends[1]!.sendId,
      status: 'queued',
      messages: [{ id: m0(written[1]!), to: 'b0@example.org', status: 'queued' }],
      skipped: [{ to: 'gone@example.org', reason: 'complained' }],
    });
  });

  it('counts the sends of one key in batch order, each answer telling the count after its own copies', async () => {
    const tenant = await makeTenant();
    const written = await writeSends(db(), [sendOf(tenant, 100, addresses('x', 2)), sendOf(tenant, 100, addresses('y', 3)), sendOf(tenant, 100, addresses('z', 1))]);
    expect(written.map((w) => w.used)).toEqual([2, 5, 6]);
    expect(await usage(tenant)).toBe(6);
  });

  it('tells concurrent API callers each their own RateLimit-Remaining, all different, none lost', async () => {
    const tenant = await makeTenant({ daily_limit: 100 });
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => as(ctx.api, tenant.token).post('/api/v1/send').send({ to: `r${i}@example.org`, subject: 'Hi', text: 'x' })),
    );
    expect(answers.every((r) => r.status === 202)).toBe(true);
    const remaining = answers.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y);
    expect(remaining).toEqual(Array.from({ length: 40 }, (_, i) => 60 + i));
    expect(await usage(tenant)).toBe(40);
  });
});

const m0 = (w: { kept: { id: string }[] }) => w.kept[0]!.id;
