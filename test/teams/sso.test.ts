import { loadConfig, ConfigError } from '../../apps/core/src/config';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { OIDC_CLIENT, OidcProvider } from '../helpers/oidc';
import { waitFor } from '../helpers/wait';
import { consoleClient, ORIGIN } from './support';

/**
 * SSO with OpenID Connect (docs/teams.md) against oidc-provider, a certified OpenID provider, in its own process: the
 * console's redirect to it, its sign-in, its redirect back, and each refusal with nothing changed.
 */
// a fixed port below Linux's ephemeral range (32768-60999), so no connection of another test can hold it
const provider = new OidcProvider(21100, `${ORIGIN}/admin/sso/callback`);
process.env.OIDC_ISSUER = provider.issuer;
process.env.OIDC_CLIENT_ID = OIDC_CLIENT.id;
process.env.OIDC_CLIENT_SECRET = OIDC_CLIENT.secret;
process.env.OIDC_LABEL = 'Example SSO';
// the accounts made below are the database's first two
process.env.OIDC_ROLE_MAP = JSON.stringify({ 'mail-operators': 'operator', 'sales-owners': '1:owner', 'sales-team': '1:sender', support: '2:viewer' });

const ctx = useApi();
beforeAll(async () => {
  await provider.start();
  const [sales, support] = [await makeTenant(), await makeTenant()];
  expect([sales.account.id, support.account.id]).toEqual([1, 2]);
}, 90_000);
afterAll(() => provider.stop());

/** A browser of its own: starts a sign-in at the console and goes through the provider; answers the way back. */
async function toProvider(browser = consoleClient(ctx.api)) {
  const start = await browser.agent.get('/admin/sso/start');
  expect(start.status).toBe(303);
  const back = await provider.authorize(start.headers.location as string);
  expect(`${back.origin}${back.pathname}`).toBe(`${ORIGIN}/admin/sso/callback`);
  return { browser, callback: `${back.pathname}${back.search}` };
}

async function signInAs(person: { sub: string; email?: string; email_verified?: boolean; groups: string[] }) {
  await provider.login({ email: `${person.sub}@example.test`, name: person.sub, email_verified: true, ...person });
  const { browser, callback } = await toProvider();
  return { browser, callback, res: await browser.agent.get(callback) };
}

const userOf = (email: string) => db().user.findUnique({ where: { email }, include: { memberships: { orderBy: { accountId: 'asc' } } } });
const auditCount = () => db().auditEntry.count();

it('shows "Sign in with" the provider on the sign-in page', async () => {
  const page = await consoleClient(ctx.api).agent.get('/admin/signin');
  expect(page.text).toContain('<a class="button" id="signin-sso" href="/admin/sso/start">Sign in with Example SSO</a>');
});

it('sends the browser to the provider with PKCE (S256), a state and a nonce, bound to it by a Lax cookie', async () => {
  const start = await consoleClient(ctx.api).agent.get('/admin/sso/start');
  const url = new URL(start.headers.location as string);
  expect(`${url.origin}${url.pathname}`).toBe(`${provider.issuer}/auth`);
  expect(Object.fromEntries(url.searchParams)).toMatchObject({ client_id: 'mail', response_type: 'code', scope: 'openid email profile', code_challenge_method: 'S256', redirect_uri: `${ORIGIN}/admin/sso/callback` });
  for (const p of ['state', 'nonce', 'code_challenge']) expect(url.searchParams.get(p)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const cookie = (start.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('ms_sso_flow='))!;
  expect(cookie).toMatch(/HttpOnly/);
  expect(cookie).toMatch(/SameSite=Lax/);
  expect(cookie).toMatch(/Path=\/admin\/sso/);
});

it('makes the user at a first sign-in with the roles the groups map to, signs them in, and audits it', async () => {
  const { browser, res } = await signInAs({ sub: 'ada', groups: ['sales-owners', 'support', 'not-mapped'] });
  expect(res.status).toBe(303);
  expect(res.headers.location).toBe('/admin');
  const user = await userOf('ada@example.test');
  expect(user).toMatchObject({ name: 'ada', operator: false, oidcIssuer: provider.issuer, oidcSubject: 'ada', passwordHash: null });
  expect(user!.memberships.map((m) => [m.accountId, m.role])).toEqual([[1, 'owner'], [2, 'viewer']]);
  const home = await browser.agent.get('/admin');
  expect(home.text).toContain('Signed in as ada@example.test through Example SSO.');
  // the session is a person's: an owner of account 1 may manage its users, a viewer of account 2 may not
  expect((await browser.agent.get('/admin/api/users?account=1')).status).toBe(200);
  expect((await browser.agent.get('/admin/api/users?account=2')).body).toEqual({ ok: false, error: 'needs users.manage' });
  const entry = await db().auditEntry.findFirstOrThrow({ where: { action: 'sso-create' }, orderBy: { id: 'desc' } });
  expect(entry).toMatchObject({ actorKind: 'user', actorLabel: 'ada@example.test', via: 'console', resource: 'user', resourceId: String(user!.id) });
});

it('applies group changes at the next sign-in: roles follow the mapping, the strongest of one account wins', async () => {
  await signInAs({ sub: 'bo', groups: ['sales-team', 'support'] });
  const before = await userOf('bo@example.test');
  expect(before!.memberships.map((m) => [m.accountId, m.role])).toEqual([[1, 'sender'], [2, 'viewer']]);
  const { res } = await signInAs({ sub: 'bo', groups: ['sales-team', 'sales-owners'] });
  expect(res.status).toBe(303);
  const after = await userOf('bo@example.test');
  expect(after!.id).toBe(before!.id);
  expect(after!.memberships.map((m) => [m.accountId, m.role])).toEqual([[1, 'owner']]);
  const entry = await db().auditEntry.findFirstOrThrow({ where: { action: 'sso-sign-in', resourceId: String(after!.id) } });
  expect(entry.before).toMatchObject({ roles: [{ account: 1, role: 'sender' }, { account: 2, role: 'viewer' }] });
  expect(entry.after).toMatchObject({ roles: [{ account: 1, role: 'owner' }] });
  // the same groups again change nothing, and write nothing
  const entries = await auditCount();
  await signInAs({ sub: 'bo', groups: ['sales-team', 'sales-owners'] });
  expect(await auditCount()).toBe(entries);
  // an operator group makes an operator
  await signInAs({ sub: 'bo', groups: ['mail-operators'] });
  expect(await userOf('bo@example.test')).toMatchObject({ operator: true, memberships: [] });
});

it('refuses a first sign-in whose groups map to nothing, and makes no user', async () => {
  const [users, entries] = [await db().user.count(), await auditCount()];
  const { browser, res } = await signInAs({ sub: 'cy', groups: ['marketing'] });
  expect(res.status).toBe(403);
  expect(res.text).toContain('Single sign-on: your identity provider gives you no role here');
  expect(res.headers['set-cookie']?.toString() ?? '').not.toMatch(/ms_console=u_/);
  expect([await db().user.count(), await auditCount()]).toEqual([users, entries]);
  expect((await browser.agent.get('/admin')).headers.location).toBe('/admin/signin');
});

it('takes every role and session from a user whose groups no longer map to anything', async () => {
  const first = await signInAs({ sub: 'di', groups: ['support'] });
  expect((await first.browser.agent.get('/admin')).status).toBe(200);
  const { res } = await signInAs({ sub: 'di', groups: [] });
  expect(res.status).toBe(403);
  expect(res.text).toContain('your identity provider no longer gives you a role here');
  expect(await userOf('di@example.test')).toMatchObject({ operator: false, memberships: [] });
  expect((await first.browser.agent.get('/admin')).headers.location).toBe('/admin/signin');
  expect(await db().auditEntry.count({ where: { action: 'sso-no-role' } })).toBe(1);
});

it('links an invited user by a verified email, and refuses an unverified one with nothing changed', async () => {
  const invited = await asAdmin(ctx.api).post('/admin/api/users').send({ email: 'eve@example.test', name: 'Eve', role: 'viewer', account: 1 });
  expect(invited.status).toBe(201);
  const entries = await auditCount();
  const refused = await signInAs({ sub: 'eve-idp', email: 'eve@example.test', email_verified: false, groups: ['sales-team'] });
  expect(refused.res.status).toBe(403);
  expect(refused.res.text).toContain('the provider does not say eve@example.test is verified');
  expect(await userOf('eve@example.test')).toMatchObject({ oidcSubject: null, memberships: [{ accountId: 1, role: 'viewer' }] });
  expect(await auditCount()).toBe(entries);
  // verified, but in no group the map names: not linked, and the role given in the console stays
  const nothing = await signInAs({ sub: 'eve-idp', email: 'eve@example.test', email_verified: true, groups: ['marketing'] });
  expect(nothing.res.status).toBe(403);
  expect(await userOf('eve@example.test')).toMatchObject({ oidcSubject: null, memberships: [{ accountId: 1, role: 'viewer' }] });
  expect(await auditCount()).toBe(entries);
  const linked = await signInAs({ sub: 'eve-idp', email: 'eve@example.test', email_verified: true, groups: ['sales-team'] });
  expect(linked.res.status).toBe(303);
  expect(await userOf('eve@example.test')).toMatchObject({ id: invited.body.user.id, oidcSubject: 'eve-idp', memberships: [{ accountId: 1, role: 'sender' }] });
});

describe('refused, with nothing changed and no session', () => {
  /** A first sign-in of `sub` through the provider, the answer of the console's callback, and what changed. */
  async function refused(sub: string, tamper: (flow: { browser: ReturnType<typeof consoleClient>; callback: string }) => Promise<unknown>) {
    await provider.login({ sub, email: `${sub}@example.test`, email_verified: true, groups: ['sales-owners'] });
    const [users, entries, sessions] = [await db().user.count(), await auditCount(), await db().userSession.count()];
    const res = (await tamper(await toProvider())) as { status: number; text: string; headers: Record<string, unknown> };
    expect([await db().user.count(), await auditCount(), await db().userSession.count()]).toEqual([users, entries, sessions]);
    expect(String(res.headers['set-cookie'] ?? '')).not.toMatch(/ms_console=u_/);
    return res;
  }

  it('an ID token from another issuer', async () => {
    const res = await refused('iss', async ({ browser, callback }) => {
      await provider.forge({ iss: 'http://127.0.0.1:41199' });
      return browser.agent.get(callback);
    });
    expect(res.status).toBe(401);
    expect(res.text).toContain(`the identity provider&#39;s ID token was refused: unexpected iss value, expected ${provider.issuer}, got: http://127.0.0.1:41199`);
  });

  it('an ID token for another audience', async () => {
    const res = await refused('aud', async ({ browser, callback }) => {
      await provider.forge({ aud: 'another-client' });
      return browser.agent.get(callback);
    });
    expect(res.status).toBe(401);
    expect(res.text).toContain('ID token was refused: aud mismatch, expected mail, got: another-client');
  });

  it('an ID token with another nonce', async () => {
    const res = await refused('nonce', async ({ browser, callback }) => {
      await provider.forge({ nonce: 'a-nonce-of-another-sign-in' });
      return browser.agent.get(callback);
    });
    expect(res.status).toBe(401);
    expect(res.text).toMatch(/ID token was refused: nonce mismatch, expected [A-Za-z0-9_-]{43}, got: a-nonce-of-another-sign-in/);
  });

  it('an expired ID token', async () => {
    const res = await refused('exp', async ({ browser, callback }) => {
      await provider.forge({ exp: Math.floor(Date.now() / 1000) - 60 });
      return browser.agent.get(callback);
    });
    expect(res.status).toBe(401);
    expect(res.text).toMatch(/ID token was refused: JWT expired, now \d+, exp \d+/);
  });

  it('an ID token signed with a key the provider never published', async () => {
    const res = await refused('signature', async ({ browser, callback }) => {
      await provider.forge({ stranger: true });
      return browser.agent.get(callback);
    });
    expect(res.status).toBe(401);
    expect(res.text).toContain('ID token was refused: failed to validate JWT signature');
  });

  it('a state from another browser (another cookie jar), which the code is never exchanged for', async () => {
    const tokens = await provider.tokens();
    const res = await refused('other-browser', ({ callback }) => consoleClient(ctx.api).agent.get(callback));
    expect(res.status).toBe(403);
    expect(res.text).toContain('this sign-in was started in another browser: start it again in this one');
    expect(await provider.tokens()).toBe(tokens);
  });

  it('a replayed answer: its state was used once already, and its code is not exchanged again', async () => {
    const first = await signInAs({ sub: 'replay', groups: ['sales-owners'] });
    expect(first.res.status).toBe(303);
    const [tokens, users, entries, sessions] = [await provider.tokens(), await db().user.count(), await auditCount(), await db().userSession.count()];
    const again = await first.browser.agent.get(first.callback);
    expect(again.status).toBe(400);
    expect(again.text).toContain('this sign-in is unknown, expired or finished already: start it again');
    expect([await provider.tokens(), await db().user.count(), await auditCount(), await db().userSession.count()]).toEqual([tokens, users, entries, sessions]);
  });

  it('an expired authorization code: the provider refuses it', async () => {
    await provider.codeTtl(1);
    try {
      const res = await refused('expired', async ({ browser, callback }) => {
        const code = new URLSearchParams(callback.split('?')[1]).get('code')!;
        expect(await provider.codeAlive(code)).toBe(true);
        await waitFor(async () => !(await provider.codeAlive(code)), { timeout: 10_000, what: 'the code to expire' });
        return browser.agent.get(callback);
      });
      expect(res.status).toBe(401);
      expect(res.text).toContain('the identity provider refused the sign-in: grant request is invalid');
    } finally {
      await provider.codeTtl(60);
    }
  });

  it('an answer with the provider error (the person cancelled)', async () => {
    const res = await refused('cancel', ({ browser }) => browser.agent.get('/admin/sso/callback?error=access_denied&error_description=End-User%20aborted%20interaction&state=x'));
    expect(res.status).toBe(401);
    expect(res.text).toContain('the identity provider refused the sign-in: End-User aborted interaction');
  });
});

it('refuses a role map that names no role, at start, in one line', () => {
  const env = { ...process.env, OIDC_ROLE_MAP: '{"sales":"1:boss"}' };
  const saved = process.env;
  process.env = env;
  try {
    expect(() => loadConfig()).toThrow(ConfigError);
    expect(() => loadConfig()).toThrow('OIDC_ROLE_MAP: "sales" must map to "operator" or "<account id>:<owner|admin|sender|viewer>", got "1:boss"');
  } finally {
    process.env = saved;
  }
});
