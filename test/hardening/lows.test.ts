import request from 'supertest';
import { redactedUrl } from '../../apps/api/src/middleware/request';
import { config } from '../../apps/core/src/config';
import { db } from '../../apps/core/src/db';
import { displayNameRefusal } from '../../apps/core/src/domains/sending';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/** The smaller findings of the fourth hardening round (docs/hardening.md). */
const ctx = useApi();

describe('the console refusing a stale form', () => {
  it('links back to a console page, never to the Referer it was sent, however much that looks like ours', async () => {
    const lookalikes = [`${config().publicUrl}.evil.example/admin`, `${config().publicUrl}@evil.example/`, 'javascript:alert(1)//', 'https://evil.example/'];
    for (const referer of lookalikes) {
      const res = await request(ctx.api.app).post('/admin/lists').set('Referer', referer).type('form').send({ _csrf: 'forged', name: 'x' });
      expect(res.status).toBe(403);
      expect(res.text).toContain('CSRF token missing or wrong');
      const links = [...res.text.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!);
      expect(links.some((href) => href.includes('evil') || href.startsWith('javascript'))).toBe(false);
      expect(links).toContain('/admin/lists');
    }
  });
});

describe('the access log', () => {
  it("redacts the OAuth flow's state as it redacts its code", () => {
    expect(redactedUrl('/admin/oauth/callback?state=s3cr3t-state&code=c0de&scope=mail')).toBe('/admin/oauth/callback?state=[redacted]&code=[redacted]&scope=mail');
  });
});

describe('a From display name', () => {
  it('that is itself an address is refused (403) and nothing is written; a plain name is used', async () => {
    const tenant = await makeTenant();
    const own = tenant.mailbox.address;
    for (const name of ['ceo@bank.example', 'Support (help@bank.example)', 'pay @ bank.example', 'x\uFF20bank.example']) {
      const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ from: `"${name}" <${own}>`, to: 'a@example.org', subject: 'Hi', text: 'x' });
      expect({ name, status: res.status, error: res.body.error }).toEqual({ name, status: 403, error: expect.stringMatching(/display name may not be an address/) });
    }
    const unquoted = await as(ctx.api, tenant.token).post('/api/v1/send').send({ from: `ceo@bank.example <${own}>`, to: 'a@example.org', subject: 'Hi', text: 'x' });
    expect(unquoted.status).toBe(403);
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
    const plain = await as(ctx.api, tenant.token).post('/api/v1/send').send({ from: `"Ann at Bank" <${own}>`, to: 'a@example.org', subject: 'Hi', text: 'x' });
    expect(plain.status).toBe(202);
  });

  it('is judged by one rule for the API and SMTP submission', () => {
    expect(displayNameRefusal('Ann Smith')).toBeNull();
    expect(displayNameRefusal('Bank, Inc.')).toBeNull();
    expect(displayNameRefusal('"boss@corp.example"')).not.toBeNull();
  });
});

describe("another account's mailbox in Reply-To", () => {
  it('is refused (403) and nothing is written; any other reply address is taken', async () => {
    const tenant = await makeTenant();
    const other = await makeTenant();
    for (const replyTo of [other.mailbox.address, other.mailbox.address.toUpperCase(), `Help <${other.mailbox.address}>`]) {
      const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ reply_to: replyTo, to: 'a@example.org', subject: 'Hi', text: 'x' });
      expect({ replyTo, status: res.status, error: res.body.error }).toEqual({ replyTo, status: 403, error: expect.stringMatching(/another account's mailbox/) });
    }
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
    const own = await as(ctx.api, tenant.token).post('/api/v1/send').send({ reply_to: 'help@example.org', to: 'a@example.org', subject: 'Hi', text: 'x' });
    expect(own.status).toBe(202);
  });

  it('is refused in a batch too: that message names why, the others go', async () => {
    const tenant = await makeTenant();
    const other = await makeTenant();
    const res = await as(ctx.api, tenant.token)
      .post('/api/v1/send/batch')
      .send({ messages: [{ reply_to: `Help <${other.mailbox.address}>`, to: 'a@example.org', subject: 'Hi', text: 'x' }, { reply_to: 'help@example.org', to: 'b@example.org', subject: 'Hi', text: 'x' }] });
    expect(res.status).toBe(200);
    expect(res.body.results[0]).toEqual({ ok: false, error: expect.stringMatching(/^reply_to: .*another account's mailbox/) });
    expect(res.body.results[1]).toMatchObject({ ok: true });
    expect(await db().message.count({ where: { accountId: tenant.account.id } })).toBe(1);
  });
});
