import { execFileSync } from 'node:child_process';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount } from '../helpers/factories';
import { consoleClient, linkToken, ORIGIN, sessionCookie } from './support';

/**
 * The second factor (docs/teams.md) through the console's forms and the admin API: TOTP codes made by Debian's
 * oathtool (never our own function), recovery codes, replays refused, disabling with a fresh code, and an account
 * that requires a second factor.
 */
jest.setTimeout(90_000);

const ctx = useApi();
const PASSWORD = 'correct horse battery staple';

/** A TOTP code of `secret` from Debian's oathtool, at now + `offsetSeconds`. */
function oathtool(secret: string, offsetSeconds = 0): string {
  const at = Math.floor(Date.now() / 1000) + offsetSeconds;
  return execFileSync('oathtool', ['--totp', '-b', secret, '--now', `@${at}`], { encoding: 'utf8' }).trim();
}

/** Invites a user through the admin API and accepts the invitation: a signed-in console client. */
async function member(email: string, role: string, account: number) {
  const res = await asAdmin(ctx.api).post('/admin/api/users').send({ email, name: email.split('@')[0], role, account });
  expect(res.status).toBe(201);
  const browser = consoleClient(ctx.api);
  const accepted = await browser.post(`/admin/invite/${linkToken(res.body.invite_url)}`, { password: PASSWORD });
  expect(accepted.status).toBe(303);
  return { id: res.body.user.id as number, browser, cookie: `ms_console=${sessionCookie(accepted).value}` };
}

/** Sets up TOTP on the Security page; answers the secret and the ten recovery codes. */
async function enrolTotp(browser: ReturnType<typeof consoleClient>, email: string) {
  const started = await browser.post('/admin/security/totp', {}, '/admin/security');
  expect(started.status).toBe(200);
  const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.text)![1]!;
  const uri = /id="totp-uri">([^<]+)</.exec(started.text)![1]!.replace(/&amp;/g, '&');
  expect(secret).toHaveLength(32);
  const parsed = new URL(uri);
  expect(parsed.protocol).toBe('otpauth:');
  expect(parsed.host).toBe('totp');
  expect(decodeURIComponent(parsed.pathname)).toBe(`/Mail service:${email}`);
  expect(Object.fromEntries(parsed.searchParams)).toEqual({ secret, issuer: 'Mail service', algorithm: 'SHA1', digits: '6', period: '30' });

  // not counted before a first code: a sign-in asks for no code yet
  expect(await db().userTotp.count({ where: { confirmedAt: { not: null }, user: { email } } })).toBe(0);
  const wrong = await browser.post('/admin/security/totp/confirm', { code: oathtool(secret, -600) }, '/admin/security');
  expect(wrong.status).toBe(400);
  expect(wrong.text).toContain('Wrong code');
  const confirmed = await browser.post('/admin/security/totp/confirm', { code: oathtool(secret) }, '/admin/security');
  expect(confirmed.status).toBe(200);
  const codes = [...confirmed.text.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]!);
  expect(codes).toHaveLength(10);
  expect(new Set(codes).size).toBe(10);
  return { secret, codes };
}

describe('TOTP', () => {
  it('enrols with a first code, keeps the secret encrypted and the recovery codes hashed', async () => {
    const account = await makeAccount();
    const ann = await member('ann@example.com', 'sender', account.id);
    const { secret, codes } = await enrolTotp(ann.browser, 'ann@example.com');
    const row = await db().userTotp.findUniqueOrThrow({ where: { userId: ann.id } });
    expect(row.confirmedAt).not.toBeNull();
    expect(row.secretEnc).not.toContain(secret);
    const stored = await db().recoveryCode.findMany({ where: { userId: ann.id } });
    expect(stored).toHaveLength(10);
    for (const code of codes) expect(stored.some((s) => s.hash.includes(code.replace('-', '')))).toBe(false);
    const entry = await db().auditEntry.findFirst({ where: { action: 'enable-totp', resourceId: String(ann.id) } });
    expect(entry).toMatchObject({ actorLabel: 'ann@example.com', via: 'console' });
    expect(JSON.stringify(entry!.after)).not.toContain(secret);
    // starting the enrolment stored a pending secret: audited, the secret redacted
    const started = await db().auditEntry.findMany({ where: { action: 'start-totp', resourceId: String(ann.id) } });
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ actorKind: 'user', actorLabel: 'ann@example.com', via: 'console', resource: 'user', after: { id: ann.id, totp: 'pending', secret: '[redacted]' } });
    expect(JSON.stringify({ ...started[0], id: undefined })).not.toContain(secret);
    // a start refused (TOTP is on already) changes nothing and writes no entry
    const again = await ann.browser.post('/admin/security/totp', {}, '/admin/security');
    expect(again.status).toBe(409);
    expect(await db().auditEntry.count({ where: { action: 'start-totp', resourceId: String(ann.id) } })).toBe(1);
    expect((await db().userTotp.findUniqueOrThrow({ where: { userId: ann.id } })).secretEnc).toBe(row.secretEnc);
    // the page says it is on
    expect((await ann.browser.agent.get('/admin/security')).text).toContain('On. Recovery codes left: 10.');
  });

  it('asks for the code after the password; refuses a wrong code and a code used already', async () => {
    const account = await makeAccount();
    const bea = await member('bea@example.com', 'sender', account.id);
    const { secret } = await enrolTotp(bea.browser, 'bea@example.com');
    const used = (await db().userTotp.findUniqueOrThrow({ where: { userId: bea.id } })).lastStep;
    expect(used).not.toBeNull();

    const browser = consoleClient(ctx.api);
    const signed = await browser.signIn('bea@example.com', PASSWORD);
    expect(signed.status).toBe(303);
    expect(signed.headers.location).toBe('/admin/signin/second-factor');
    const pending = `ms_console=${sessionCookie(signed).value}`;
    // a pending session opens neither the console nor the admin API
    expect((await browser.agent.get('/admin/keys')).headers.location).toBe('/admin/signin');
    const api = await request(ctx.api.app).get('/admin/api/keys').set('Cookie', pending);
    expect(api.status).toBe(401);
    expect(api.body.error).toBe('finish signing in first: your second factor is still to come');
    expect((await browser.agent.get('/admin/signin/second-factor')).text).toContain('Code from your authenticator app');

    const wrong = await browser.post('/admin/signin/second-factor', { code: oathtool(secret, -600) }, '/admin/signin/second-factor');
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong code: check the time on your device');
    // the code that confirmed the enrolment was used: it works no more, within its window or not
    const code = oathtool(secret);
    const step = BigInt(Math.floor(Date.now() / 30_000));
    if (step <= used!) {
      const replay = await browser.post('/admin/signin/second-factor', { code }, '/admin/signin/second-factor');
      expect(replay.status).toBe(401);
      expect(replay.text).toContain('That code was used already');
    }
    const good = step <= used! ? oathtool(secret, 30) : code;
    const ok = await browser.post('/admin/signin/second-factor', { code: good }, '/admin/signin/second-factor');
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toBe('/admin');
    const full = `ms_console=${sessionCookie(ok).value}`;
    expect(full).not.toBe(pending);
    expect((await browser.agent.get('/admin/keys')).status).toBe(200);
    expect((await request(ctx.api.app).get('/admin/api/keys').set('Cookie', full)).status).toBe(200);
    // the pending session's token is worth nothing now
    expect((await request(ctx.api.app).get('/admin/api/keys').set('Cookie', pending)).status).toBe(401);

    // the same code again, in another browser: used already
    const again = consoleClient(ctx.api);
    await again.signIn('bea@example.com', PASSWORD);
    const replayed = await again.post('/admin/signin/second-factor', { code: good }, '/admin/signin/second-factor');
    expect(replayed.status).toBe(401);
    expect(replayed.text).toContain('That code was used already: wait for the next one');
  });

  it('signs in with a recovery code once', async () => {
    const account = await makeAccount();
    const cy = await member('cy@example.com', 'viewer', account.id);
    const { codes } = await enrolTotp(cy.browser, 'cy@example.com');
    const browser = consoleClient(ctx.api);
    await browser.signIn('cy@example.com', PASSWORD);
    const ok = await browser.post('/admin/signin/second-factor', { code: codes[3]!.toUpperCase() }, '/admin/signin/second-factor');
    expect(ok.status).toBe(303);
    expect((await browser.agent.get('/admin/security')).text).toContain('Recovery codes left: 9.');
    const other = consoleClient(ctx.api);
    await other.signIn('cy@example.com', PASSWORD);
    const again = await other.post('/admin/signin/second-factor', { code: codes[3]! }, '/admin/signin/second-factor');
    expect(again.status).toBe(401);
    expect(again.text).toContain('That code was used already');
  });

  it('turns off only with a fresh code; its recovery codes go with it', async () => {
    const account = await makeAccount();
    const di = await member('di@example.com', 'viewer', account.id);
    const { secret } = await enrolTotp(di.browser, 'di@example.com');
    const wrong = await di.browser.post('/admin/security/totp/disable', { code: oathtool(secret, -600) }, '/admin/security');
    expect(wrong.status).toBe(401);
    expect(await db().userTotp.count({ where: { userId: di.id } })).toBe(1);
    const lastStep = (await db().userTotp.findUniqueOrThrow({ where: { userId: di.id } })).lastStep!;
    // a code of a step already used (the confirming one, or an earlier one) is refused too
    const stale = await di.browser.post('/admin/security/totp/disable', { code: oathtool(secret, Number(lastStep) * 30 - Math.floor(Date.now() / 1000)) }, '/admin/security');
    expect(stale.status).toBe(401);
    expect(stale.text).toContain('used already');
    const off = await di.browser.post('/admin/security/totp/disable', { code: oathtool(secret, 30) }, '/admin/security');
    expect(off.status).toBe(303);
    expect(await db().userTotp.count({ where: { userId: di.id } })).toBe(0);
    expect(await db().recoveryCode.count({ where: { userId: di.id } })).toBe(0);
    expect(await db().auditEntry.count({ where: { action: 'disable-totp', resourceId: String(di.id) } })).toBe(1);
    // no code asked at the next sign-in
    const browser = consoleClient(ctx.api);
    expect((await browser.signIn('di@example.com', PASSWORD)).headers.location).toBe('/admin');
  });
});

describe('an account that requires a second factor', () => {
  it('an owner requires it through the admin API; a user without one is sent to enrol first', async () => {
    const account = await makeAccount();
    const owner = await member('ed@example.com', 'owner', account.id);
    const viewer = await member('fa@example.com', 'viewer', account.id);
    const api = (cookie: string) => ({
      get: (path: string) => request(ctx.api.app).get(path).set('Cookie', cookie),
      post: (path: string) => request(ctx.api.app).post(path).set('Cookie', cookie).set('Origin', ORIGIN),
    });

    // refused, with nothing changed
    expect((await api(viewer.cookie).post('/admin/api/users/second-factor').send({ account: account.id, required: true })).body).toEqual({ ok: false, error: 'needs users.manage' });
    expect((await asAdmin(ctx.api).post('/admin/api/users/second-factor').send({ account: account.id, required: 'yes' })).status).toBe(400);
    expect((await asAdmin(ctx.api).post('/admin/api/users/second-factor').send({ account: 999_999, required: true })).status).toBe(404);
    expect((await db().account.findUniqueOrThrow({ where: { id: account.id } })).requireSecondFactor).toBe(false);

    const required = await api(owner.cookie).post('/admin/api/users/second-factor').send({ account: account.id, required: true });
    expect(required.status).toBe(200);
    expect(required.body.second_factor).toMatchObject({ account: account.id, required: true });
    expect(await db().auditEntry.count({ where: { action: 'require-second-factor', accountId: account.id, actorLabel: 'ed@example.com' } })).toBe(1);

    // the viewer's next request: the console sends them to the Security page, the admin API refuses
    const page = await viewer.browser.agent.get('/admin/keys');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/admin/security');
    expect((await viewer.browser.agent.get('/admin/security')).text).toContain('An account of yours requires a second factor');
    const refused = await api(viewer.cookie).get('/admin/api/keys');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatch(/requires a second factor/);

    const { secret } = await enrolTotp(viewer.browser, 'fa@example.com');
    expect((await viewer.browser.agent.get('/admin/keys')).status).toBe(200);
    expect((await api(viewer.cookie).get('/admin/api/keys')).status).toBe(200);

    // the owner is held to it too
    expect((await api(owner.cookie).get('/admin/api/users/second-factor?account=' + account.id)).status).toBe(403);
    await enrolTotp(owner.browser, 'ed@example.com');
    const listed = await api(owner.cookie).get(`/admin/api/users/second-factor?account=${account.id}`);
    expect(listed.body.second_factor.users).toEqual([
      { id: owner.id, email: 'ed@example.com', totp: true, passkeys: 0, recovery_codes_left: 10 },
      { id: viewer.id, email: 'fa@example.com', totp: true, passkeys: 0, recovery_codes_left: 10 },
    ]);

    // a lost phone: the owner resets the viewer's factors; their sessions end, and they enrol again at the next sign-in
    const cleared = await request(ctx.api.app).delete(`/admin/api/users/${viewer.id}/second-factor`).set('Cookie', owner.cookie).set('Origin', ORIGIN);
    expect(cleared.body).toEqual({ ok: true, factors: { totp: false, passkeys: 0, recovery_codes_left: 0 } });
    expect((await api(viewer.cookie).get('/admin/api/keys')).status).toBe(401);
    const back = consoleClient(ctx.api);
    expect((await back.signIn('fa@example.com', PASSWORD)).headers.location).toBe('/admin');
    expect((await back.agent.get('/admin')).headers.location).toBe('/admin/security');
    // the old secret's codes no longer count
    expect(await db().userTotp.count({ where: { userId: viewer.id } })).toBe(0);
    expect(secret).toHaveLength(32);
  });
});

describe('the failure rule', () => {
  // last in the file: the address stays locked out for a minute
  it('counts wrong codes with wrong passwords: past the allowance even the right code answers 429', async () => {
    const account = await makeAccount();
    const go = await member('go@example.com', 'viewer', account.id);
    const { secret } = await enrolTotp(go.browser, 'go@example.com');
    const browser = consoleClient(ctx.api);
    await browser.signIn('go@example.com', PASSWORD);
    const _csrf = await browser.csrf('/admin/signin/second-factor');
    const wrong = oathtool(secret, -600);
    let last = 0;
    for (let i = 0; i < 25 && last !== 429; i++) last = (await browser.agent.post('/admin/signin/second-factor').type('form').send({ _csrf, code: wrong })).status;
    expect(last).toBe(429);
    const locked = await browser.post('/admin/signin/second-factor', { code: oathtool(secret, 30) }, '/admin/signin/second-factor');
    expect(locked.status).toBe(429);
    expect(locked.text).toContain('Too many failed sign-ins');
    expect((await consoleClient(ctx.api).signIn('go@example.com', PASSWORD)).status).toBe(429);
  }, 180_000);
});
