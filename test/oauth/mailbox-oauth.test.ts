import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { decryptSecret, encryptSecret } from '../../apps/core/src/crypto';
import { config } from '../../apps/core/src/config';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { productionGuards } from '../../apps/core/src/delivery/production-guards';
import { accessToken, forgetAccessToken, MailboxNeedsReconnect, OAuthProviderAway, tokenProvider } from '../../apps/core/src/oauth/tokens';
import { reconcileDeliveries } from '../../apps/core/src/delivery/reconcile';
import { logger } from '../../apps/core/src/logger';
import { redis, rkey } from '../../apps/core/src/redis';
import { createWorkers } from '../../apps/worker/src/workers';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeKey, wantEvents } from '../helpers/factories';
import { AuthServer, CLIENT, XOAuthSmtp } from '../helpers/oauth';
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
  delivery = createDelivery(db(), productionGuards());
  workers = createWorkers({ delivery, queues: ['delivery'], concurrency: 5 });
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
  const account = await makeAccount();
  const refresh = await auth.consent(address);
  const res = await asAdmin(ctx.api)
    .post('/admin/api/mailboxes')
    .send({
      account: account.id,
      address,
      smtp: smtp.url(address),
      auth: { type: 'oauth2', provider: 'custom', client_id: CLIENT.id, client_secret: CLIENT.secret, refresh_token: refresh, token_url: auth.tokenUrl, scope: 'mail' },
      ...extra,
    });
  expect(res.status).toBe(201);
  const { token } = await makeKey(account.id, res.body.mailbox.id, { daily_limit: 1000 });
  return { address, account, mailbox: res.body.mailbox as { id: number; status: string }, token, refresh };
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

describe('tokens', () => {
  test('one refresh at a time across workers: concurrent callers share the one token, cached encrypted in Redis', async () => {
    const { mailbox } = await oauthTenant();
    const before = (await auth.stats()).refreshes;
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    // as many callers as a few workers' connections opening at once
    const tokens = await Promise.all(Array.from({ length: 20 }, () => accessToken(db(), row)));
    expect(new Set(tokens.map((t) => t.token)).size).toBe(1);
    expect((await auth.stats()).refreshes).toBe(before + 1);
    const cached = await redis().get(rkey('oauth', 'token', mailbox.id));
    expect(cached).toBeTruthy();
    expect(cached).not.toContain(tokens[0]!.token);
    expect(await auth.introspect(tokens[0]!.token)).toMatchObject({ active: true });
  });

  test('a token the server refused is replaced by a fresh one', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    const first = await accessToken(db(), row);
    const second = await accessToken(db(), row, { rejected: first.token });
    expect(second.token).not.toBe(first.token);
  });
});

describe('when a token is asked for again', () => {
  afterEach(() => auth.set({ ttl: 3600 }));

  test('a long-lived token is refreshed the margin before it expires, a short-lived one at half its life: the later of the two', async () => {
    const margin = config().oauth.refreshMarginSeconds * 1000;
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    // an hour's token: the margin before expiry (55 min of use by default) is later than half its life
    await auth.set({ ttl: 3600 });
    const long = await accessToken(db(), row);
    expect(long.expiresAt - long.refreshAt).toBe(margin);
    // a token whose life is shorter than twice the margin: half its life is the later bound
    await auth.set({ ttl: Math.floor(margin / 1000) });
    const short = await accessToken(db(), row, { rejected: long.token });
    expect(short.expiresAt - short.refreshAt).toBe(margin / 2);
  });
});

describe('the token cache', () => {
  test('a cached token is answered without a refresh until forgotten; the provider renews a refused one and says when to ask again', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    const provide = tokenProvider(db(), row);
    const first = await provide(false);
    const before = (await auth.stats()).refreshes;
    const cached = await accessToken(db(), row);
    expect(first).toEqual({ token: cached.token, expires: cached.refreshAt });
    expect(await provide(false)).toEqual(first);
    expect((await auth.stats()).refreshes).toBe(before);
    // nodemailer's renew: the token it was given was refused
    const renewed = await provide(true);
    expect(renewed.token).not.toBe(first.token);
    expect((await auth.stats()).refreshes).toBe(before + 1);
    await forgetAccessToken(mailbox.id);
    expect(await redis().get(rkey('oauth', 'token', mailbox.id))).toBeNull();
    expect((await accessToken(db(), row)).token).not.toBe(renewed.token);
    expect((await auth.stats()).refreshes).toBe(before + 2);
  });

  test('a mailbox that does not sign in with OAuth2, or has no refresh token, gets no token', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await expect(accessToken(db(), { ...row, authType: 'password' })).rejects.toThrow(`mailbox ${row.id} does not sign in with OAuth2`);
    await db().mailbox.update({ where: { id: row.id }, data: { oauthRefreshTokenEnc: null } });
    const refused = await accessToken(db(), row).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(MailboxNeedsReconnect);
    expect(refused).toMatchObject({ mailboxId: row.id, message: `mailbox ${row.id} needs reconnecting: it has no refresh token` });
  });
});

describe('token requests, asked for directly', () => {
  const tokenKey = (id: number) => rkey('oauth', 'token', id);
  const awayKey = (id: number) => rkey('oauth', 'away', id);
  const lockKey = (id: number) => rkey('oauth', 'lock', id);
  const sealed = (token: string, refreshAt: number) => encryptSecret(JSON.stringify({ token, refreshAt, expiresAt: refreshAt + 60_000 }), config().secretKey);
  const away = async (id: number) => JSON.parse((await redis().get(awayKey(id)))!) as { failures: number; retryAt: number; reason: string };
  /** the outage as it stands after `failures` failed requests, its pause over */
  const pauseOver = (id: number, failures: number) => redis().set(awayKey(id), JSON.stringify({ failures, retryAt: Date.now() - 1, reason: 'earlier' }), 'PX', 60_000);

  test('the provider away: no request before its pause is over, the pause doubles from 1 s up to 5 min, its answer ends it', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await redis().del(tokenKey(row.id));
    await auth.set({ down: true });
    try {
      const before = (await auth.stats()).unavailable;
      const t0 = Date.now();
      const first = (await accessToken(db(), row).catch((err: unknown) => err)) as OAuthProviderAway;
      expect(first).toBeInstanceOf(OAuthProviderAway);
      expect(first.mailboxId).toBe(row.id);
      expect(first.retryAt - t0).toBeGreaterThanOrEqual(1_000);
      expect(first.retryAt - Date.now()).toBeLessThanOrEqual(1_000);
      expect(first.message).toMatch(new RegExp(`^mailbox ${row.id}: the OAuth2 provider is away \\(.+\\); next token request after ${new Date(first.retryAt).toISOString().replace(/[.]/g, '\\.')}$`));
      expect(await away(row.id)).toEqual({ failures: 1, retryAt: first.retryAt, reason: expect.any(String) });
      // kept past the pause (to keep counting) by the longest pause
      expect(await redis().pttl(awayKey(row.id))).toBeGreaterThan(300_000);
      expect(await redis().pttl(awayKey(row.id))).toBeLessThanOrEqual(301_000);
      // within the pause: refused at once, whichever worker asks, without a request
      const again = (await accessToken(db(), row).catch((err: unknown) => err)) as OAuthProviderAway;
      expect(again).toBeInstanceOf(OAuthProviderAway);
      expect(again.retryAt).toBe(first.retryAt);
      expect((await auth.stats()).unavailable).toBe(before + 1);
      // past it: one more request, and the next pause is twice the last
      await pauseOver(row.id, 1);
      const t1 = Date.now();
      const second = (await accessToken(db(), row).catch((err: unknown) => err)) as OAuthProviderAway;
      expect(second.retryAt - t1).toBeGreaterThanOrEqual(2_000);
      expect(second.retryAt - Date.now()).toBeLessThanOrEqual(2_000);
      expect((await away(row.id)).failures).toBe(2);
      expect((await auth.stats()).unavailable).toBe(before + 2);
      // never more than 5 minutes
      await pauseOver(row.id, 12);
      const t2 = Date.now();
      const longest = (await accessToken(db(), row).catch((err: unknown) => err)) as OAuthProviderAway;
      expect(longest.retryAt - t2).toBeGreaterThanOrEqual(300_000);
      expect(longest.retryAt - Date.now()).toBeLessThanOrEqual(300_000);
      expect((await away(row.id)).failures).toBe(13);
      // the provider answers again: a token, and the outage is forgotten
      await auth.set({ down: false });
      await pauseOver(row.id, 13);
      expect((await accessToken(db(), row)).token).toBeTruthy();
      expect(await redis().get(awayKey(row.id))).toBeNull();
    } finally {
      await auth.set({ down: false });
    }
  }, 30_000);

  test('a cached token past its refresh time, or one that does not decrypt, is replaced; the cache lives as long as the token', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await auth.set({ ttl: 3600 });
    const before = (await auth.stats()).refreshes;
    await redis().set(tokenKey(row.id), sealed('stale-token', Date.now() - 1));
    const fresh = await accessToken(db(), row);
    expect(fresh.token).not.toBe('stale-token');
    expect((await auth.stats()).refreshes).toBe(before + 1);
    expect(await redis().pttl(tokenKey(row.id))).toBeGreaterThan(3_590_000);
    expect(await redis().pttl(tokenKey(row.id))).toBeLessThanOrEqual(3_600_000);
    // the refresh let its lock go
    expect(await redis().get(lockKey(row.id))).toBeNull();
    await redis().set(tokenKey(row.id), 'not a sealed token');
    const again = await accessToken(db(), row);
    expect(again.token).not.toBe(fresh.token);
    expect((await auth.stats()).refreshes).toBe(before + 2);
    // a usable one is answered as it is
    await redis().set(tokenKey(row.id), sealed('still-good', Date.now() + 60_000));
    expect((await accessToken(db(), row)).token).toBe('still-good');
  });

  test("while another worker holds the lock, a caller waits for that worker's token and leaves its lock alone", async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await redis().del(tokenKey(row.id));
    await redis().set(lockKey(row.id), 'another worker', 'PX', 30_000);
    const before = (await auth.stats()).refreshes;
    const waiting = accessToken(db(), row);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis().set(tokenKey(row.id), sealed('from-another-worker', Date.now() + 60_000));
    expect((await waiting).token).toBe('from-another-worker');
    expect(await redis().get(lockKey(row.id))).toBe('another worker');
    expect((await auth.stats()).refreshes).toBe(before);
    await redis().del(lockKey(row.id));
  });

  test('a mailbox marked needs_reconnect asks for no token, and says why', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await redis().del(tokenKey(row.id));
    const before = (await auth.stats()).refreshes;
    await db().mailbox.update({ where: { id: row.id }, data: { authStatus: 'needs_reconnect', disconnectReason: 'consent withdrawn' } });
    await expect(accessToken(db(), row)).rejects.toThrow(`mailbox ${row.id} needs reconnecting: consent withdrawn`);
    await db().mailbox.update({ where: { id: row.id }, data: { disconnectReason: null } });
    await expect(accessToken(db(), row)).rejects.toThrow(`mailbox ${row.id} needs reconnecting: consent was refused`);
    expect((await auth.stats()).refreshes).toBe(before);
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

  test("a worker that saw the provider away logs its return when it takes another worker's fresh token from the cache", async () => {
    const { mailbox } = await oauthTenant();
    const box = { id: mailbox.id, authType: 'oauth2' as const };
    await redis().del(rkey('oauth', 'token', mailbox.id));
    const lines: string[] = [];
    const spies = (['warn', 'info'] as const).map((level) =>
      jest.spyOn(logger, level).mockImplementation(((fields: { dependency?: string }) => {
        if (fields?.dependency === `oauth provider of mailbox ${mailbox.id}`) lines.push(level);
      }) as never),
    );
    try {
      await auth.set({ down: true });
      await expect(accessToken(db(), box)).rejects.toBeInstanceOf(OAuthProviderAway);
      await auth.set({ down: false });
      // another worker's token request succeeded once the provider was back: its token is in the cache, as it writes it
      await redis().del(rkey('oauth', 'away', mailbox.id));
      const now = Date.now();
      const theirs = { token: 'from-another-worker', refreshAt: now + 60_000, expiresAt: now + 120_000 };
      await redis().set(rkey('oauth', 'token', mailbox.id), encryptSecret(JSON.stringify(theirs), config().secretKey), 'PX', 120_000);
      expect((await accessToken(db(), box)).token).toBe('from-another-worker');
    } finally {
      await auth.set({ down: false });
      spies.forEach((s) => s.mockRestore());
    }
    expect(lines).toEqual(['warn', 'info']);
  }, 60_000);
});
