import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { decryptSecret } from '../../apps/core/src/crypto';
import { config } from '../../apps/core/src/config';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { accessToken } from '../../apps/core/src/oauth/tokens';
import { reconcileDeliveries } from '../../apps/core/src/delivery/reconcile';
import { logger } from '../../apps/core/src/logger';
import { redis, rkey } from '../../apps/core/src/redis';
import { createWorkers } from '../../apps/worker/src/workers';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeKey, wantEvents } from '../helpers/factories';
import { adminOAuthMailbox, AuthServer, CLIENT, XOAuthSmtp } from '../helpers/oauth';
import { waitFor } from '../helpers/wait';

/**
 * Mailboxes that sign in with OAuth2, against a real authorization server (oauth2-mock-server in its own process) and
 * an SMTP server that takes XOAUTH2 only, checking every token at the authorization server's introspection endpoint.
 */
const ctx = useApi();
const auth = new AuthServer();
let smtp: XOAuthSmtp;
let delivery: Delivery;
let workers: Worker[] = [];

beforeAll(async () => {
  await auth.start();
  smtp = await new XOAuthSmtp(auth).start();
  delivery = createDelivery(db(), deliveryRegistrations());
  workers = createWorkers({ db: db(), delivery, queues: ['delivery'], concurrency: 5 });
}, 30_000);
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
  delivery.close();
  await smtp.stop();
  await auth.stop();
});

let n = 0;
/** An account with an OAuth2 mailbox (created through the admin API) and a key that sends from it. */
async function oauthTenant(extra: Record<string, unknown> = {}) {
  const address = `owner${++n}@example.test`;
  const { account, refresh, mailbox } = await adminOAuthMailbox(ctx.api, auth, address, smtp.url(address), extra);
  const { token } = await makeKey(account.id, mailbox.id, { daily_limit: 1000 });
  return { address, account, mailbox, token, refresh };
}

const send = (token: string, from: string, to: string, subject = 'Hello') =>
  as(ctx.api, token).post('/api/v1/send').send({ from, to, subject, text: 'Hi there' });

const messagesOf = (mailboxId: number) => db().message.findMany({ where: { mailboxId }, orderBy: { createdAt: 'asc' } });

describe('auth on POST/PATCH /admin/api/mailboxes', () => {
  test('the secrets are encrypted at rest and never answered', async () => {
    const { mailbox, refresh } = await oauthTenant();
    expect(mailbox).toMatchObject({ status: 'active', auth: { type: 'oauth2', provider: 'custom', client_id: CLIENT.id, token_url: auth.tokenUrl, scope: 'mail' } });
    const listed = await asAdmin(ctx.api).get('/admin/api/mailboxes');
    const text = JSON.stringify(listed.body);
    expect(text).not.toContain(refresh);
    expect(text).not.toContain(CLIENT.secret);
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    expect(row.oauthRefreshTokenEnc).not.toContain(refresh);
    expect(row.oauthClientSecretEnc).not.toContain(CLIENT.secret);
    expect(decryptSecret(row.oauthRefreshTokenEnc!, config().secretKey)).toBe(refresh);
    // the connection test logs in with XOAUTH2 as the worker does
    const tested = await asAdmin(ctx.api).post(`/admin/api/mailboxes/${mailbox.id}/test`);
    expect(tested.body).toMatchObject({ ok: true, smtp: { ok: true, message: expect.stringContaining('accepted the connection and the login') }, imap: null });
  });

  test('refusals name the field and change nothing', async () => {
    const account = await makeAccount();
    const base = { account: account.id, address: 'x@example.test', smtp: smtp.url('x@example.test') };
    const oauth = { type: 'oauth2', provider: 'custom', client_id: 'c', refresh_token: 'r', token_url: auth.tokenUrl };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...base, auth: { ...oauth, token_url: undefined } }, /token_url is required/],
      [{ ...base, auth: { ...oauth, refresh_token: undefined } }, /refresh_token is required/],
      [{ ...base, auth: { ...oauth, provider: 'yahoo' } }, /provider/],
      [{ ...base, smtp: 'smtp://x%40example.test:pw@127.0.0.1:25', auth: oauth }, /carries no password/],
      [{ account: account.id, address: 'x@example.test', auth: oauth }, /smtp is required/],
    ];
    for (const [body, words] of cases) {
      const res = await asAdmin(ctx.api).post('/admin/api/mailboxes').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ ok: false, error: expect.stringMatching(words) });
    }
    expect(await db().mailbox.count({ where: { accountId: account.id } })).toBe(0);
  });

  test('a Google mailbox gets the preset servers, token URL and scopes', async () => {
    const account = await makeAccount();
    const res = await asAdmin(ctx.api)
      .post('/admin/api/mailboxes')
      .send({ account: account.id, address: 'Ann@Corp.example', auth: { type: 'oauth2', provider: 'google', client_id: 'g-client', client_secret: 'g-secret', refresh_token: 'g-refresh' } });
    expect(res.status).toBe(201);
    expect(res.body.mailbox).toMatchObject({
      smtp: { host: 'smtp.gmail.com', port: 465, secure: true, user: 'ann@corp.example' },
      imap: { host: 'imap.gmail.com', port: 993, secure: true, user: 'ann@corp.example' },
      auth: { type: 'oauth2', provider: 'google', token_url: 'https://oauth2.googleapis.com/token', scope: 'https://mail.google.com/ openid email' },
    });
  });
});

describe('sending through XOAUTH2', () => {
  test('an email goes out over SMTP signed in with an access token; across its expiry nothing fails and the rotated refresh token is kept', async () => {
    await auth.set({ ttl: 3, rotate: true });
    try {
      const { address, mailbox, token, refresh } = await oauthTenant();
      const before = await auth.stats();
      expect((await send(token, address, 'first@dest.test')).status).toBe(202);
      await waitFor(() => smtp.to('first@dest.test').length === 1, { what: 'the first email' });
      expect(smtp.to('first@dest.test')[0]!.user).toBe(address);
      const afterFirst = await auth.stats();
      expect(afterFirst.refreshes).toBe(before.refreshes + 1);
      // the refresh token was rotated: the one given is dead, the stored one is the new one
      const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
      const stored = decryptSecret(row.oauthRefreshTokenEnc!, config().secretKey);
      expect(stored).not.toBe(refresh);
      expect(afterFirst.grants).toContain(stored);
      expect(afterFirst.grants).not.toContain(refresh);

      const used = await accessToken(db(), row);
      // past the access token's expiry, with the sessions gone: a new login needs a new token
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      expect(await auth.introspect(used.token)).toMatchObject({ active: false });
      smtp.dropSessions();
      const refusedBefore = smtp.refusedLogins;
      for (const to of ['second@dest.test', 'third@dest.test']) expect((await send(token, address, to)).status).toBe(202);
      await waitFor(() => smtp.to('second@dest.test').length + smtp.to('third@dest.test').length === 2, { what: 'the emails after the expiry' });
      expect(smtp.refusedLogins).toBe(refusedBefore);
      expect((await auth.stats()).refreshes).toBeGreaterThan(afterFirst.refreshes);
      // the server has the email before the worker records it as sent
      await waitFor(async () => (await messagesOf(mailbox.id)).every((m) => m.status !== 'sending'), { what: 'the sends recorded' });
      const rows = await messagesOf(mailbox.id);
      expect(rows.map((m) => m.status)).toEqual(['sent', 'sent', 'sent']);
      expect(rows.every((m) => m.attempts === 1)).toBe(true);
    } finally {
      await auth.set({ ttl: 3600 });
    }
  }, 30_000);
});

describe('revoked consent', () => {
  test('invalid_grant: needs_reconnect, mailbox.disconnected, the emails wait; reconnecting sends each exactly once', async () => {
    const { address, account, mailbox, token } = await oauthTenant();
    await wantEvents(account.id);
    expect((await send(token, address, 'before@dest.test')).status).toBe(202);
    await waitFor(() => smtp.to('before@dest.test').length === 1, { what: 'the email before the revocation' });

    // the owner withdraws consent; the provider ends the sessions and kills the tokens
    await auth.revoke(address);
    smtp.dropSessions();
    const waiting = ['w1@dest.test', 'w2@dest.test', 'w3@dest.test'];
    for (const to of waiting) expect((await send(token, address, to)).status).toBe(202);

    await waitFor(async () => (await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } })).authStatus === 'needs_reconnect', { what: 'needs_reconnect' });
    const listed = await asAdmin(ctx.api).get('/admin/api/mailboxes');
    const shown = listed.body.mailboxes.find((m: { id: number }) => m.id === mailbox.id);
    expect(shown).toMatchObject({ status: 'needs_reconnect', disconnected: { reason: expect.stringContaining('invalid_grant') } });
    const events = await db().event.findMany({ where: { accountId: account.id, type: 'mailbox.disconnected' } });
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ mailbox: { id: mailbox.id, address } });

    // nothing failed, nothing went out: every email waits (deferred), however long
    await waitFor(async () => (await messagesOf(mailbox.id)).filter((m) => m.status === 'deferred').length === 3, { what: 'three waiting emails' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const held = await messagesOf(mailbox.id);
    expect(held.map((m) => m.status).sort()).toEqual(['deferred', 'deferred', 'deferred', 'sent']);
    for (const to of waiting) expect(smtp.to(to)).toHaveLength(0);
    // the waits used up no delivery attempt, and the reconciler leaves the disconnected mailbox's rows alone
    expect(held.filter((m) => m.status === 'deferred').every((m) => m.lastError?.includes('needs reconnecting'))).toBe(true);
    // nor does a message's page show them as attempts: no server was asked anything
    expect(await db().messageAttempt.count({ where: { message: { mailboxId: mailbox.id } } })).toBe(0);
    const before = await db().message.findMany({ where: { mailboxId: mailbox.id, status: 'deferred' } });
    await reconcileDeliveries(db());
    expect(await db().message.findMany({ where: { mailboxId: mailbox.id, status: 'deferred' } })).toEqual(before);
    // one email sent while disconnected is accepted and waits too
    expect((await send(token, address, 'w4@dest.test')).status).toBe(202);
    waiting.push('w4@dest.test');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(smtp.to('w4@dest.test')).toHaveLength(0);

    // reconnect: a new consent, its refresh token stored; the waiting emails go out, each once
    const fresh = await auth.consent(address);
    const res = await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${mailbox.id}`).send({ auth: { type: 'oauth2', provider: 'custom', refresh_token: fresh } });
    expect(res.status).toBe(200);
    expect(res.body.mailbox).toMatchObject({ status: 'active', disconnected: null });
    await waitFor(() => waiting.every((to) => smtp.to(to).length >= 1), { timeout: 20_000, what: 'the waiting emails' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    for (const to of waiting) expect(smtp.to(to)).toHaveLength(1);
    await waitFor(async () => (await messagesOf(mailbox.id)).every((m) => m.status === 'sent'), { what: 'the waiting emails recorded as sent' });
    const after = await messagesOf(mailbox.id);
    expect(after).toHaveLength(5);
  }, 60_000);
});

describe('the provider down', () => {
  test('its token endpoint answering 503: token requests back off, no attempt is spent, one warn line and one info line', async () => {
    const { address, mailbox, token } = await oauthTenant();
    // no token in the cache and no SMTP session open: the next email needs a token request
    await redis().del(rkey('oauth', 'token', mailbox.id));
    smtp.dropSessions();
    const lines: { level: string; msg: string }[] = [];
    const spies = (['warn', 'info'] as const).map((level) =>
      jest.spyOn(logger, level).mockImplementation(((fields: { dependency?: string }, msg: string) => {
        if (fields?.dependency === `oauth provider of mailbox ${mailbox.id}`) lines.push({ level, msg });
      }) as never),
    );
    await auth.set({ down: true });
    try {
      const before = (await auth.stats()).unavailable;
      const waiting = ['p1@dest.test', 'p2@dest.test', 'p3@dest.test', 'p4@dest.test'];
      for (const to of waiting) expect((await send(token, address, to)).status).toBe(202);
      await waitFor(async () => (await messagesOf(mailbox.id)).filter((m) => m.status === 'deferred').length === 4, { what: 'four waiting emails' });
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      // 6 s down: a request, then after 1 s, 2 s (4 s): not one per email and connection
      expect((await auth.stats()).unavailable - before).toBeLessThanOrEqual(4);
      const held = await messagesOf(mailbox.id);
      expect(held.every((m) => m.status === 'deferred' && m.attempts === 0)).toBe(true);
      for (const to of waiting) expect(smtp.to(to)).toHaveLength(0);

      // the provider is back: each email goes out once, on its first attempt
      await auth.set({ down: false });
      await waitFor(() => waiting.every((to) => smtp.to(to).length >= 1), { timeout: 20_000, what: 'the waiting emails' });
      await waitFor(async () => (await messagesOf(mailbox.id)).every((m) => m.status === 'sent'), { what: 'the emails recorded as sent' });
      expect((await messagesOf(mailbox.id)).map((m) => m.attempts)).toEqual([1, 1, 1, 1]);
      for (const to of waiting) expect(smtp.to(to)).toHaveLength(1);
    } finally {
      await auth.set({ down: false });
      spies.forEach((s) => s.mockRestore());
    }
    expect(lines.map((l) => l.level)).toEqual(['warn', 'info']);
  }, 60_000);
});
