import { db } from '../../apps/core/src/db';
import { IdempotencyClaims } from '../../apps/core/src/idempotency';
import { SMTP_ROUTE } from '../../apps/core/src/sending/accept';
import { ABANDONED_AFTER_MS } from '../../apps/core/src/idempotency';
import { newId } from '../../apps/core/src/ids';
import { makeTenant } from '../helpers/factories';

/** The answer a claim carries: the send it is for, by id (made before the key is taken). */
const FINGERPRINT = 'f'.repeat(64);
const answer = (id = newId()) => ({ status: 202, body: { ok: true, id, status: 'queued' } });

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
    const earlier = await claims.start(scope('taken'), fingerprint, answer());
    // the first call runs alone; the four made while it runs go together in the next batch
    const [first, ...together] = await Promise.allSettled([
      claims.start(scope('lone'), fingerprint, answer()),
      claims.start(scope('a'), fingerprint, answer()),
      claims.start(scope('a'), fingerprint, answer()),
      claims.start(scope('b'), fingerprint, answer()),
      claims.start(scope('taken'), fingerprint, answer()),
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

  /** A tenant whose key `key` was just taken, by a claim for the send `sendId`. */
  async function taken(key: string, sendId = newId()) {
    const tenant = await makeTenant();
    const claims = new IdempotencyClaims(db());
    const scope = { apiKeyId: tenant.keyId, route: SMTP_ROUTE, key };
    const start = await claims.start(scope, FINGERPRINT, answer(sendId));
    if (start.kind !== 'new') throw new Error('expected a new record');
    return { tenant, recordId: start.recordId, again: () => claims.start(scope, FINGERPRINT, answer()) };
  }
  /** The record as if taken longer ago than a request may take. */
  const abandon = (id: number) => db().idempotencyRecord.update({ where: { id }, data: { createdAt: new Date(Date.now() - ABANDONED_AFTER_MS - 1000) } });

  it('a key whose send was accepted is answered from its record', async () => {
    const { recordId, again } = await taken('done');
    await db().idempotencyRecord.update({ where: { id: recordId }, data: { state: 'done', responseStatus: 202, responseBody: { id: 'the-first' } } });
    expect(await again()).toEqual({ kind: 'replay', status: 202, body: { id: 'the-first' } });
  });

  it('a record carries its answer from the start and is done once its send exists, without being marked done', async () => {
    const sendId = newId();
    const { tenant, recordId, again } = await taken('sent', sendId);
    const replay = { kind: 'replay', status: 202, body: { ok: true, id: sendId, status: 'queued' } };
    expect(await db().idempotencyRecord.findUniqueOrThrow({ where: { id: recordId } })).toMatchObject({ state: 'processing', responseStatus: 202, responseBody: replay.body });
    // no send yet: another connection with the same key waits
    await expect(again()).rejects.toThrow(/still being processed/);
    await db().send.create({ data: { id: sendId, accountId: tenant.account.id, apiKeyId: tenant.keyId, subject: 'x', fromName: '' } });
    expect(await again()).toEqual(replay);
    // long after, the send still answers for its key: it is not taken for abandoned
    await abandon(recordId);
    expect(await again()).toEqual(replay);
    expect(await db().idempotencyRecord.count({ where: { apiKeyId: tenant.keyId, route: SMTP_ROUTE, key: 'sent' } })).toBe(1);
  });

  it('a record whose send was never written is taken over once abandoned', async () => {
    const { recordId, again } = await taken('lost');
    await abandon(recordId);
    const next = await again();
    expect(next).toMatchObject({ kind: 'new' });
    expect((next as { recordId: number }).recordId).not.toBe(recordId);
  });
});
