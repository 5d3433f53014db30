import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { getImport, receiveImport, runImport } from '../../apps/core/src/imports';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { asAdmin, useApi } from '../helpers/api';
import { address, confirmationMessages, listFixture, tokenOfStored } from '../lists/support';
import { runAdmin } from '../helpers/processes';

/**
 * The consent ledger (docs/preferences.md): every subscribe, confirm, unsubscribe, import and suppression writes a row
 * in the transaction of the change, with its source, the client's address and the text the person was shown; the
 * admin API reads a subscriber's ledger in order and exports it with what is held on them.
 */
const ctx = useApi();

const ledger = async (id: number) => {
  const res = await asAdmin(ctx.api).get(`/admin/api/subscribers/${id}/consent`);
  expect(res.status).toBe(200);
  return res.body as { subscriber: { email: string; status: string }; consent: { kind: string; source: string; ip: string; form_text: string; detail: Record<string, unknown>; at: string }[] };
};

describe('the consent ledger', () => {
  it('shows each step of a hosted-form story in order: sign-up, confirmation, one-click unsubscribe', async () => {
    const f = await listFixture(ctx.api, { name: 'Garden Notes' });
    const email = address('story');
    const form = await request(ctx.api.app).post(`/f/${f.list.key}`).type('form').send({ email, name: 'Ada' });
    expect(form.status).toBe(200);
    const [message] = await confirmationMessages(email);
    expect((await request(ctx.api.app).post(`/confirm/${tokenOfStored(message!)}`).type('form').send('')).status).toBe(200);
    const id = (await f.subscriber(email))!.id;
    const oneClick = await request(ctx.api.app).post(`/u/${unsubscribeToken(id)}`).type('form').send('List-Unsubscribe=One-Click');
    expect(oneClick.status).toBe(200);

    const { subscriber, consent } = await ledger(id);
    expect(subscriber).toMatchObject({ email, status: 'unsubscribed' });
    expect(consent.map((c) => [c.kind, c.source])).toEqual([
      ['subscribe', 'form'],
      ['confirm', 'form'],
      ['unsubscribe', 'one_click'],
    ]);
    expect(consent[0]!.form_text).toContain('Subscribe to Garden Notes');
    expect(consent[0]!.form_text).toContain('We will send you an email to confirm your address.');
    expect(consent[0]!.detail).toMatchObject({ status: 'pending' });
    expect(consent[1]!.form_text).toContain('You asked to receive emails from Garden Notes');
    for (const step of consent) expect(step.ip).toMatch(/127\.0\.0\.1/);
    const times = consent.map((c) => Date.parse(c.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it('records an API key\'s add (the one-statement path and the transaction) and its unsubscribe, naming the key', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const fast = address('fast');
    expect((await f.subscribe({ email: fast })).body.status).toBe('active');
    expect((await f.unsubscribe({ email: fast })).body.status).toBe('unsubscribed');
    const { consent } = await ledger((await f.subscriber(fast))!.id);
    expect(consent.map((c) => [c.kind, c.source])).toEqual([
      ['subscribe', 'api_key'],
      ['unsubscribe', 'api_key'],
    ]);
    expect(consent[0]!.detail).toEqual({ status: 'active', key: f.tenant.keyId });

    const confirming = await listFixture(ctx.api, { confirm: true });
    const slow = address('slow');
    expect((await confirming.subscribe({ email: slow })).body.status).toBe('pending');
    expect((await confirming.subscribe({ email: slow, confirmed: true })).body.status).toBe('active');
    const slowLedger = await ledger((await confirming.subscriber(slow))!.id);
    expect(slowLedger.consent.map((c) => [c.kind, c.source, c.detail.key])).toEqual([
      ['subscribe', 'api_key', confirming.tenant.keyId],
      ['confirm', 'api_key', confirming.tenant.keyId],
    ]);
  });

  it('records an import line with the consent it carried, and a bounce\'s suppression on every list of the account', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address('imported');
    const line = JSON.stringify({ email, consent_source: 'paper form at the fair', consent_at: '2026-01-02T03:04:05Z' });
    const view = await receiveImport(db(), f.list.id, 'ndjson', [line]);
    expect(await runImport(db(), view.id)).toBe('done');
    expect((await getImport(db(), view.id)).added).toBe(1);
    await db().$transaction((tx) => suppressAddress(tx, f.tenant.account.id, email, 'bounced', '550 5.1.1 no such user'));
    const { consent } = await ledger((await f.subscriber(email))!.id);
    expect(consent.map((c) => [c.kind, c.source])).toEqual([
      ['import', 'import'],
      ['suppression', 'mail'],
    ]);
    expect(consent[0]!.detail).toMatchObject({ status: 'active', consent_source: 'paper form at the fair' });
    expect(Date.parse(String(consent[0]!.detail.consent_at))).toBe(Date.parse('2026-01-02T03:04:05Z'));
    expect(consent[1]!.detail).toEqual({ reason: 'bounced', detail: '550 5.1.1 no such user' });
  });

  it('writes no row for a change that rolled back', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address('rolled');
    await f.subscribe({ email });
    const id = (await f.subscriber(email))!.id;
    await expect(
      db().$transaction(async (tx) => {
        await suppressAddress(tx, f.tenant.account.id, email, 'complained');
        throw new Error('the transaction fails after the suppression');
      }),
    ).rejects.toThrow('fails');
    expect((await ledger(id)).consent.map((c) => c.kind)).toEqual(['subscribe']);
  });

  it('exports what is held on the subscriber with the ledger as a JSON file, and answers 404 for an unknown subscriber', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address('export');
    await f.subscribe({ email, name: 'Eve', fields: { city: 'Oslo' } });
    const id = (await f.subscriber(email))!.id;
    const res = await asAdmin(ctx.api).get(`/admin/api/subscribers/${id}/consent/export`);
    expect(res.status).toBe(200);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="subscriber-${id}-consent.json"`);
    expect(res.body.subscriber).toMatchObject({ id, email, name: 'Eve', fields: { city: 'Oslo' }, list: f.list.key, status: 'active' });
    expect(res.body.consent.map((c: { kind: string }) => c.kind)).toEqual(['subscribe']);
    expect(typeof res.body.exported_at).toBe('string');
    const missing = await asAdmin(ctx.api).get('/admin/api/subscribers/2000000000/consent');
    expect(missing.status).toBe(404);
    expect(missing.body.ok).toBe(false);
    expect((await request(ctx.api.app).get(`/admin/api/subscribers/${id}/consent`)).status).toBe(401);
  });
});

describe('the CLI', () => {
  it('subscriber consent ID prints the same export as the admin API', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const email = address('cli');
    await f.subscribe({ email });
    const id = (await f.subscriber(email))!.id;
    const printed = await runAdmin('subscriber', 'consent', String(id));
    expect(printed.code).toBe(0);
    expect(printed.out.subscriber).toMatchObject({ id, email, status: 'active' });
    expect(printed.out.consent.map((c: { kind: string; source: string }) => `${c.kind}/${c.source}`)).toEqual(['subscribe/api_key']);
  });
});
