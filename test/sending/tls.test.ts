import { checkSmtp } from '../../apps/core/src/mailbox-settings/check';
import { db } from '../../apps/core/src/db';
import request from 'supertest';
import { ADMIN_TOKEN, as, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeTenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { TlsSink } from './tls-sink';
import { waitFor } from '../helpers/wait';

/** smtp:// with a login never sends the password in clear: STARTTLS first, unless the URL says ?tls=off. */
const ctx = useApi();
const worker = useDelivery();
useMail({ queues: ['delivery'], delivery: worker });
const sink = new SmtpSink({ user: 'ann', pass: 's3cret' });
beforeAll(() => sink.start());
afterAll(() => sink.stop());

const inClear = () => sink.url.replace('?tls=off', '');

it('refuses to log in to a server that offers no STARTTLS: no AUTH on the wire, the send is not made', async () => {
  const tenant = await makeTenant({ smtp: inClear() });
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
  const check = await checkSmtp(mailbox);
  expect(check.ok).toBe(false);
  expect(check.message).toMatch(/STARTTLS/i);
  const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'reader@example.org', subject: 'Hi', text: 'x' });
  expect(res.status).toBe(202);
  const row = await waitFor(async () => {
    const m = await db().message.findFirst({ where: { mailboxId: mailbox.id } });
    return m && m.lastError ? m : undefined;
  }, { what: 'a delivery attempt' });
  expect(['deferred', 'queued']).toContain(row.status);
  expect(row.lastError).toMatch(/STARTTLS/i);
  expect(sink.logins).toBe(0);
  expect(sink.messages).toHaveLength(0);
});

it('logs in over the plain connection when the URL says tls=off, and delivers', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  expect(sink.url).toMatch(/\?tls=off$/);
  const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'fine@example.org', subject: 'Hi', text: 'x' });
  expect(res.status).toBe(202);
  await waitFor(() => (sink.to('fine@example.org').length ? true : undefined), { what: 'the delivery' });
  expect(sink.logins).toBeGreaterThan(0);
});

it('admin API: refuses a bad tls parameter, shows require_tls, and changes SMTP URL and limits by PATCH', async () => {
  const account = await makeAccount();
  for (const [smtp, error] of [
    ['smtp://a:b@127.0.0.1:25?tls=maybe', /tls may only be "off" .* or "insecure"/],
    ['smtp://a:b@127.0.0.1:25?tls=off&tls=insecure', /tls may only be/],
    ['smtps://a:b@127.0.0.1:465?tls=off', /contradicts smtps/],
    ['smtp://a:b@127.0.0.1:25?debug=1', /unknown URL parameter "debug"/],
  ] as const) {
    const res = await asAdmin(ctx.api).post('/admin/api/mailboxes').send({ account: account.id, address: `x${Math.random()}@acme.test`, smtp });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(error);
  }
  expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(0);

  const created = await asAdmin(ctx.api).post('/admin/api/mailboxes').send({ account: account.id, address: 'box@acme.test', smtp: 'smtp://u:pw1@127.0.0.1:2525' });
  expect(created.status).toBe(201);
  expect(created.body.mailbox.smtp).toEqual({ host: '127.0.0.1', port: 2525, secure: false, user: 'u', require_tls: true, tls: 'on' });
  const id = created.body.mailbox.id;
  const patched = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${id}`).send({ smtp: 'smtp://v:pw2@mail.acme.test:587?tls=off', daily_limit: 10, gap_seconds: 5, name: 'Sales' });
  expect(patched.status).toBe(200);
  expect(patched.body.mailbox).toMatchObject({ name: 'Sales', daily_limit: 10, gap_seconds: 5, smtp: { host: 'mail.acme.test', port: 587, user: 'v', require_tls: false, tls: 'off' } });
  expect(JSON.stringify(patched.body)).not.toContain('pw2');
  const row = await db().mailbox.findUniqueOrThrow({ where: { id } });
  expect(row.smtpPasswordEnc).not.toContain('pw2');
  // a refused change changes nothing
  const refused = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${id}`).send({ smtp: 'ftp://x', daily_limit: 99 });
  expect(refused.status).toBe(400);
  expect((await db().mailbox.findUniqueOrThrow({ where: { id } })).dailyLimit).toBe(10);
});

describe('tls=off and tls=insecure against a server that offers STARTTLS with a self-signed certificate', () => {
  const relay = new TlsSink({ user: 'ann', pass: 's3cret' });
  const tlsRelay = new TlsSink({ user: 'ann', pass: 's3cret' }, { secure: true });
  beforeAll(() => Promise.all([relay.start(), tlsRelay.start()]));
  afterAll(async () => {
    worker.delivery.close();
    await Promise.all([relay.stop(), tlsRelay.stop()]);
  });

  async function send(smtp: string, to: string) {
    const tenant = await makeTenant({ smtp });
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 'Hi', text: 'x' });
    expect(res.status).toBe(202);
    return tenant;
  }

  it('tls=off speaks plain SMTP: no STARTTLS although offered, and delivers; the mailbox says tls off, require_tls false', async () => {
    const tenant = await send(relay.url('?tls=off'), 'plain@example.org');
    const got = await waitFor(() => relay.messages.find((m) => m.to === 'plain@example.org'), { what: 'the delivery' });
    expect(got).toMatchObject({ secure: false, user: 'ann' });
    expect(relay.upgrades).toBe(0);
    const shown = await asAdmin(ctx.api).get('/admin/api/mailboxes').expect(200);
    const mailbox = shown.body.mailboxes.find((m: { id: number }) => m.id === tenant.mailbox.id);
    expect(mailbox.smtp).toMatchObject({ tls: 'off', require_tls: false });
  });

  it('without tls the self-signed certificate is refused: nothing sent, the error names the certificate', async () => {
    const logins = relay.logins;
    const tenant = await send(relay.url(''), 'checked@example.org');
    const row = await waitFor(async () => {
      const m = await db().message.findFirst({ where: { mailboxId: tenant.mailbox.id } });
      return m && m.lastError ? m : undefined;
    }, { what: 'a delivery attempt' });
    expect(row.lastError).toMatch(/certificate/i);
    expect(relay.messages.find((m) => m.to === 'checked@example.org')).toBeUndefined();
    expect(relay.logins).toBe(logins);
  });

  it('tls=insecure upgrades with STARTTLS whatever the certificate, logs in over TLS and delivers', async () => {
    const tenant = await send(relay.url('?tls=insecure'), 'insecure@example.org');
    const got = await waitFor(() => relay.messages.find((m) => m.to === 'insecure@example.org'), { what: 'the delivery' });
    expect(got).toMatchObject({ secure: true, user: 'ann' });
    const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } });
    expect(await checkSmtp(mailbox)).toMatchObject({ ok: true });
    const shown = await asAdmin(ctx.api).get('/admin/api/mailboxes').expect(200);
    expect(shown.body.mailboxes.find((m: { id: number }) => m.id === tenant.mailbox.id).smtp).toMatchObject({ tls: 'insecure', require_tls: true });
    // the console warns about it on the mailbox's page
    const console = request.agent(ctx.api.app);
    const signin = await console.get('/admin/signin');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
    await console.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }).expect(303);
    const page = await console.get(`/admin/mailboxes/${tenant.mailbox.id}`).expect(200);
    expect(page.text).toMatch(/tls=insecure<\/code>: the server's certificate is not checked/);
  });

  it('smtps:// with tls=insecure is TLS from the start with any certificate', async () => {
    await send(tlsRelay.url('?tls=insecure'), 'smtps@example.org');
    const got = await waitFor(() => tlsRelay.messages.find((m) => m.to === 'smtps@example.org'), { what: 'the delivery' });
    expect(got).toMatchObject({ secure: true, user: 'ann' });
  });
});
