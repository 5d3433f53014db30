import { db } from '../../apps/core/src/db';
import { IdempotencyClaims } from '../../apps/core/src/idempotency';
import { SMTP_ROUTE } from '../../apps/core/src/sending/accept';
import { makeTenant } from '../helpers/factories';

/**
 * IdempotencyClaims (SMTP submission's Message-ID keys): the keys of callers that arrive together are taken in one
 * insert, and each caller gets what startIdempotent alone would answer.
 */
describe('Idempotency keys taken together', () => {
  it('a batch takes each new key once: a key repeated in the batch, or taken before, is refused while processing', async () => {
    const tenant = await makeTenant();
    const claims = new IdempotencyClaims(db());
    const scope = (key: string) => ({ apiKeyId: tenant.keyId, route: SMTP_ROUTE, key });
    const fingerprint = 'f'.repeat(64);
    const earlier = await claims.start(scope('taken'), fingerprint);
    // the first call runs alone; the four made while it runs go together in the next batch
    const [first, ...together] = await Promise.allSettled([
      claims.start(scope('lone'), fingerprint),
      claims.start(scope('a'), fingerprint),
      claims.start(scope('a'), fingerprint),
      claims.start(scope('b'), fingerprint),
      claims.start(scope('taken'), fingerprint),
    ]);
    expect(earlier).toMatchObject({ kind: 'new' });
    expect(first).toMatchObject({ status: 'fulfilled', value: { kind: 'new' } });
    expect(together[0]).toMatchObject({ status: 'fulfilled', value: { kind: 'new' } });
    expect(together[1]).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/still being processed/) } });
    expect(together[2]).toMatchObject({ status: 'fulfilled', value: { kind: 'new' } });
    expect(together[3]).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/still being processed/) } });
    const records = await db().idempotencyRecord.findMany({ where: { apiKeyId: tenant.keyId, route: SMTP_ROUTE }, orderBy: { key: 'asc' } });
    expect(records.map((r) => [r.key, r.state])).toEqual([
      ['a', 'processing'],
      ['b', 'processing'],
      ['lone', 'processing'],
      ['taken', 'processing'],
    ]);
    const ids = [first, together[0], together[2]].map((r) => (r as PromiseFulfilledResult<{ recordId: number }>).value.recordId);
    expect(new Set(ids).size).toBe(3);
    expect(records.map((r) => r.id)).toEqual(expect.arrayContaining(ids));
  });

  it('a key whose send was accepted is answered from its record', async () => {
    const tenant = await makeTenant();
    const claims = new IdempotencyClaims(db());
    const scope = { apiKeyId: tenant.keyId, route: SMTP_ROUTE, key: 'done' };
    const start = await claims.start(scope, 'f'.repeat(64));
    if (start.kind !== 'new') throw new Error('expected a new record');
    await db().idempotencyRecord.update({ where: { id: start.recordId }, data: { state: 'done', responseStatus: 202, responseBody: { id: 'the-first' } } });
    expect(await claims.start(scope, 'f'.repeat(64))).toEqual({ kind: 'replay', status: 202, body: { id: 'the-first' } });
  });
});
