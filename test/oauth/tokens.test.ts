import { db } from '../../apps/core/src/db';
import { decryptSecret, encryptSecret } from '../../apps/core/src/crypto';
import { config } from '../../apps/core/src/config';
import { accessToken, forgetAccessToken, MailboxNeedsReconnect, OAuthProviderAway, tokenProvider } from '../../apps/core/src/oauth/tokens';
import { logger } from '../../apps/core/src/logger';
import { redis, rkey } from '../../apps/core/src/redis';
import { useApi } from '../helpers/api';
import { adminOAuthMailbox, AuthServer } from '../helpers/oauth';

/**
 * The access tokens of OAuth2 mailboxes (oauth/tokens.ts) asked for directly, against a real authorization server
 * (oauth2-mock-server in its own process): one refresh at a time, when to refresh, the cache, the provider away, the
 * lock. Sending with them is test/oauth/mailbox-oauth.test.ts. No SMTP here, so that `npm run mutate` (group
 * oauth-tokens) runs each mutant through these alone.
 */
const ctx = useApi();
const auth = new AuthServer();

beforeAll(() => auth.start(), 90_000);
afterAll(() => auth.stop());

let n = 0;
/** An account with an OAuth2 mailbox created through the admin API (its SMTP server is never dialled here). */
async function oauthTenant() {
  const address = `owner${++n}@example.test`;
  const { mailbox } = await adminOAuthMailbox(ctx.api, auth, address, `smtp://${encodeURIComponent(address)}@127.0.0.1:41799?tls=off`);
  return { address, mailbox };
}

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

  test("the token request carries the mailbox's scope, and none when it has none (the provider's default)", async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    expect(row.oauthScope).toBe('mail');
    expect(await auth.introspect((await accessToken(db(), row)).token)).toMatchObject({ active: true, scope: 'mail' });
    await db().mailbox.update({ where: { id: row.id }, data: { oauthScope: null } });
    await forgetAccessToken(row.id);
    // oauth2-mock-server gives a token asked for without a scope the scope "dummy"
    expect(await auth.introspect((await accessToken(db(), row)).token)).toMatchObject({ active: true, scope: 'dummy' });
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

  test('the stored row decides, not the caller: a row without a token URL, or no longer signing in with OAuth2, asks for no token', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    const before = (await auth.stats()).refreshes;
    const noToken = `mailbox ${row.id} needs reconnecting: it has no refresh token`;
    await db().mailbox.update({ where: { id: row.id }, data: { oauthTokenUrl: null } });
    await expect(accessToken(db(), row)).rejects.toThrow(noToken);
    // the caller still holds the row as it was (an OAuth2 mailbox); the stored one signs in with a password now
    await db().mailbox.update({ where: { id: row.id }, data: { oauthTokenUrl: row.oauthTokenUrl, authType: 'password' } });
    await expect(accessToken(db(), row)).rejects.toThrow(noToken);
    expect((await auth.stats()).refreshes).toBe(before);
    // as it was: a token
    await db().mailbox.update({ where: { id: row.id }, data: { authType: 'oauth2' } });
    expect((await accessToken(db(), row)).token).toBeTruthy();
    expect((await auth.stats()).refreshes).toBe(before + 1);
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
      expect(first.name).toBe('OAuthProviderAway');
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

describe('the provider back', () => {
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

describe('the refresh token', () => {
  afterEach(() => auth.set({ rotate: true }));

  test('a rotated one is stored encrypted before the lock goes (the row otherwise unchanged); one not rotated is kept', async () => {
    const { mailbox } = await oauthTenant();
    const other = await db().mailbox.findUniqueOrThrow({ where: { id: (await oauthTenant()).mailbox.id } });
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    const key = config().secretKey;
    await auth.set({ rotate: true });
    await forgetAccessToken(row.id);
    await accessToken(db(), row);
    const rotated = await db().mailbox.findUniqueOrThrow({ where: { id: row.id } });
    expect(decryptSecret(rotated.oauthRefreshTokenEnc!, key)).not.toBe(decryptSecret(row.oauthRefreshTokenEnc!, key));
    expect(rotated.updatedAt).toEqual(row.updatedAt);
    // written to that mailbox alone
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: other.id } })).oauthRefreshTokenEnc).toBe(other.oauthRefreshTokenEnc);
    await auth.set({ rotate: false });
    await forgetAccessToken(row.id);
    expect((await accessToken(db(), row)).token).toBeTruthy();
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: row.id } })).oauthRefreshTokenEnc).toBe(rotated.oauthRefreshTokenEnc);
  });

  test('a refresh token that does not decrypt (SECRET_KEY changed) fails as such, not as the provider away', async () => {
    const { mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await db().mailbox.update({ where: { id: row.id }, data: { oauthRefreshTokenEnc: encryptSecret('a refresh token', Buffer.alloc(32, 7)) } });
    await forgetAccessToken(row.id);
    const failed = await accessToken(db(), row).catch((err: unknown) => err);
    // node's own words for a GCM tag that does not match (its error is of another realm than jest's Error)
    expect(failed).toMatchObject({ message: expect.stringMatching(/unable to authenticate data/) });
    expect(failed).not.toBeInstanceOf(OAuthProviderAway);
    expect(failed).not.toBeInstanceOf(MailboxNeedsReconnect);
    expect(await redis().get(rkey('oauth', 'away', row.id))).toBeNull();
  });

  test('invalid_grant: the mailbox needs reconnecting, says why, and its cached token is gone', async () => {
    const { address, mailbox } = await oauthTenant();
    const row = await db().mailbox.findUniqueOrThrow({ where: { id: mailbox.id } });
    await redis().set(rkey('oauth', 'token', row.id), encryptSecret(JSON.stringify({ token: 'old', refreshAt: Date.now() - 1, expiresAt: Date.now() + 60_000 }), config().secretKey));
    await auth.revoke(address);
    const before = (await auth.stats()).refused;
    const refused = (await accessToken(db(), row).catch((err: unknown) => err)) as InstanceType<typeof MailboxNeedsReconnect>;
    expect(refused).toBeInstanceOf(MailboxNeedsReconnect);
    expect(refused.name).toBe('MailboxNeedsReconnect');
    expect(refused.mailboxId).toBe(row.id);
    expect(refused.message).toMatch(new RegExp(`^mailbox ${row.id} needs reconnecting: .*revoked`));
    const marked = await db().mailbox.findUniqueOrThrow({ where: { id: row.id } });
    expect(marked.authStatus).toBe('needs_reconnect');
    expect(refused.message).toBe(`mailbox ${row.id} needs reconnecting: ${marked.disconnectReason}`);
    expect(await redis().get(rkey('oauth', 'token', row.id))).toBeNull();
    expect(await redis().get(rkey('oauth', 'lock', row.id))).toBeNull();
    // asked again: no token request, the stored reason
    await expect(accessToken(db(), row)).rejects.toThrow(`mailbox ${row.id} needs reconnecting: ${marked.disconnectReason}`);
    expect((await auth.stats()).refused).toBe(before + 1);
  });
});
