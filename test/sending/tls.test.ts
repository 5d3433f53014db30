import { checkSmtp } from '../../apps/core/src/delivery/check';
import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { SmtpSink } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

/** smtp:// with a login never sends the password in clear: STARTTLS first, unless the URL says ?tls=off. */
const ctx = useApi();
useMail({ queues: ['delivery'] });
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
    ['smtp://a:b@127.0.0.1:25?tls=maybe', /tls may only be "off"/],
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
  expect(created.body.mailbox.smtp).toEqual({ host: '127.0.0.1', port: 2525, secure: false, user: 'u', require_tls: true });
  const id = created.body.mailbox.id;
  const patched = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${id}`).send({ smtp: 'smtp://v:pw2@mail.acme.test:587?tls=off', daily_limit: 10, gap_seconds: 5, name: 'Sales' });
  expect(patched.status).toBe(200);
  expect(patched.body.mailbox).toMatchObject({ name: 'Sales', daily_limit: 10, gap_seconds: 5, smtp: { host: 'mail.acme.test', port: 587, user: 'v', require_tls: false } });
  expect(JSON.stringify(patched.body)).not.toContain('pw2');
  const row = await db().mailbox.findUniqueOrThrow({ where: { id } });
  expect(row.smtpPasswordEnc).not.toContain('pw2');
  // a refused change changes nothing
  const refused = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${id}`).send({ smtp: 'ftp://x', daily_limit: 99 });
  expect(refused.status).toBe(400);
  expect((await db().mailbox.findUniqueOrThrow({ where: { id } })).dailyLimit).toBe(10);
});
