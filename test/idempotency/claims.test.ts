import { sha256 } from '../../apps/core/src/crypto';
import { db } from '../../apps/core/src/db';
import { ABANDONED_AFTER_MS } from '../../apps/core/src/idempotency';
import { newId } from '../../apps/core/src/ids';
import { acceptRawSend, createSending, SMTP_ROUTE, type RawSubmission } from '../../apps/core/src/sending/accept';
import { writeSends, type SendToWrite } from '../../apps/core/src/sending/write';
import { makeTenant, type Tenant } from '../helpers/factories';

/**
 * The Message-ID keys of submitted messages (SMTP_ROUTE), taken by the accepted sends' one statement
 * (sending/repository.ts WRITE_CLAIMED_SENDS): a send is written only if its key is free, and the record it takes
 * carries its answer from then on.
 */
const FINGERPRINT = 'f'.repeat(64);
const claim = (key: string) => ({ route: SMTP_ROUTE, key, fingerprint: FINGERPRINT });

/** A submitted message of `tenant` to `to`, its key `key` (none: no claim). */
function send(tenant: Tenant, to: string[], key?: string): SendToWrite {
  return {
    key: { id: tenant.keyId, accountId: tenant.account.id, dailyLimit: 1000 },
    mailbox: { id: tenant.mailbox.id, address: tenant.mailbox.address },
    request: { to, subject: 's', text: null, html: null, fromName: '', replyTo: null, headers: {}, attachments: [], sendAt: null, metadata: {} },
    sendId: newId(),
    idempotencyRecord: undefined,
    raw: Buffer.from(`From: ${tenant.mailbox.address}\r\nSubject: s\r\n\r\nbody\r\n`),
    headerFrom: tenant.mailbox.address,
    messageIdHeader: `<${key ?? newId()}@client.example>`,
    ...(key ? { claim: claim(key) } : {}),
  };
}

const records = (tenant: Tenant) => db().idempotencyRecord.findMany({ where: { apiKeyId: tenant.keyId, route: SMTP_ROUTE }, orderBy: { key: 'asc' } });
const sendIds = async (tenant: Tenant) => (await db().send.findMany({ where: { accountId: tenant.account.id }, select: { id: true } })).map((s) => s.id).sort();

describe('Message-ID keys taken by the accepted sends’ statement', () => {
  it('one statement takes each free key once, for the first send naming it; a send whose key is held writes nothing', async () => {
    const tenant = await makeTenant();
    const held = send(tenant, ['held@claims.example'], 'held');
    const [earlier] = await writeSends(db(), [held]);
    expect(earlier!.claimed).toEqual(expect.any(Number));
    const batch = [send(tenant, ['a1@claims.example'], 'a'), send(tenant, ['a2@claims.example'], 'a'), send(tenant, ['b@claims.example'], 'b'), send(tenant, ['h@claims.example'], 'held'), send(tenant, ['none@claims.example'])];
    const written = await writeSends(db(), batch);
    expect(written.map((w) => w.claimed)).toEqual([expect.any(Number), null, expect.any(Number), null, undefined]);
    // the sends whose key was held count nothing against the key's limit
    expect(written.map((w) => w.used)).toEqual([2, null, 3, null, 4]);
    expect(await sendIds(tenant)).toEqual([held, batch[0]!, batch[2]!, batch[4]!].map((s) => s.sendId).sort());
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(4);
    // each record carries the answer of the send that took it, and stays processing: it is done once that send exists
    const byKey = Object.fromEntries((await records(tenant)).map((r) => [r.key, r]));
    expect(Object.keys(byKey)).toEqual(['a', 'b', 'held']);
    expect(byKey.a).toMatchObject({ id: written[0]!.claimed, state: 'processing', fingerprint: FINGERPRINT, responseStatus: 202, responseBody: { ok: true, id: batch[0]!.sendId, status: 'queued' } });
    expect(byKey.b).toMatchObject({ id: written[2]!.claimed, responseBody: { id: batch[2]!.sendId } });
    expect(byKey.held).toMatchObject({ id: earlier!.claimed });
    expect(byKey.a!.expiresAt.getTime() - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
  });

  it('a send refused by its key’s limit inside a batch is written alone under the record the batch took', async () => {
    const tenant = await makeTenant({ daily_limit: 3 });
    const limited = (to: string[], key: string) => ({ ...send(tenant, to, key), key: { id: tenant.keyId, accountId: tenant.account.id, dailyLimit: 3 } });
    const batch = [limited(['l1@claims.example', 'l2@claims.example'], 'first'), limited(['l3@claims.example', 'l4@claims.example'], 'second')];
    const written = await writeSends(db(), batch);
    // together they pass the limit; alone the first fits and the second does not
    expect(written.map((w) => w.used)).toEqual([2, null]);
    expect(written.map((w) => w.claimed)).toEqual([expect.any(Number), expect.any(Number)]);
    expect(await sendIds(tenant)).toEqual([batch[0]!.sendId]);
    const byKey = Object.fromEntries((await records(tenant)).map((r) => [r.key, r]));
    expect(byKey.first).toMatchObject({ id: written[0]!.claimed, responseBody: { id: batch[0]!.sendId } });
    // the refused send's record is left for its caller to free (acceptRawSend does)
    expect(byKey.second).toMatchObject({ id: written[1]!.claimed, state: 'processing' });
  });

  describe('through acceptRawSend', () => {
    const sending = createSending(db());
    afterAll(() => sending.finished.stop());

    const message = (tenant: Tenant, to: string, messageId: string): RawSubmission => ({
      to: [to],
      raw: Buffer.from(`From: ${tenant.mailbox.address}\r\nMessage-ID: ${messageId}\r\nSubject: s\r\n\r\nbody\r\n`),
      from: tenant.mailbox.address,
      fromName: '',
      subject: 's',
      messageId,
      sendId: newId(),
      messageIdHeader: messageId,
    });
    const key = async (tenant: Tenant) => db().apiKey.findUniqueOrThrow({ where: { id: tenant.keyId } });

    it('the same Message-ID again answers the first send and writes nothing', async () => {
      const tenant = await makeTenant();
      const first = await acceptRawSend(db(), sending, await key(tenant), message(tenant, 'once@claims.example', '<once@client.example>'));
      const again = await acceptRawSend(db(), sending, await key(tenant), message(tenant, 'once@claims.example', '<once@client.example>'));
      expect(again).toMatchObject({ replayed: true, status: 202, body: { id: first.body.id } });
      expect(await sendIds(tenant)).toEqual([first.body.id]);
    });

    it('a refused message frees its key: the client’s next try is accepted', async () => {
      const tenant = await makeTenant();
      await db().suppression.create({ data: { accountId: tenant.account.id, email: 'gone@claims.example', reason: 'bounced' } });
      await expect(acceptRawSend(db(), sending, await key(tenant), message(tenant, 'gone@claims.example', '<refused@client.example>'))).rejects.toThrow(/nobody to write to/);
      expect(await records(tenant)).toEqual([]);
      const next = await acceptRawSend(db(), sending, await key(tenant), message(tenant, 'kept@claims.example', '<refused@client.example>'));
      expect(next.replayed).toBe(false);
      expect((await records(tenant)).map((r) => (r.responseBody as { id: string }).id)).toEqual([next.body.id]);
    });

    it('a key whose send was never written is taken over once abandoned, and the send that took it over answers for it from then on', async () => {
      const tenant = await makeTenant();
      // a process died between taking the key and writing its send
      await db().idempotencyRecord.create({
        data: { apiKeyId: tenant.keyId, route: SMTP_ROUTE, key: sha256('<lost@client.example>'), fingerprint: sha256(SMTP_ROUTE), state: 'processing', expiresAt: new Date(Date.now() + 3600_000), responseStatus: 202, responseBody: { ok: true, id: newId(), status: 'queued' } },
      });
      await expect(acceptRawSend(db(), sending, await key(tenant), message(tenant, 'lost@claims.example', '<lost@client.example>'))).rejects.toThrow(/still being processed/);
      await db().idempotencyRecord.updateMany({ where: { apiKeyId: tenant.keyId }, data: { createdAt: new Date(Date.now() - ABANDONED_AFTER_MS - 1000) } });
      const taken = await acceptRawSend(db(), sending, await key(tenant), message(tenant, 'lost@claims.example', '<lost@client.example>'));
      expect(taken.replayed).toBe(false);
      // long after, the send that took it over still answers: the key is not taken for abandoned again
      await db().idempotencyRecord.updateMany({ where: { apiKeyId: tenant.keyId }, data: { createdAt: new Date(Date.now() - ABANDONED_AFTER_MS - 1000) } });
      const again = await acceptRawSend(db(), sending, await key(tenant), message(tenant, 'lost@claims.example', '<lost@client.example>'));
      expect(again).toMatchObject({ replayed: true, body: { id: taken.body.id } });
      expect(await sendIds(tenant)).toEqual([taken.body.id]);
    });
  });
});
