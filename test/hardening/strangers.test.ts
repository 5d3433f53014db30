import './support/tight-limits';
import http from 'node:http';
import net from 'node:net';
import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { DASHBOARD_PATH } from '../../apps/api/src/dashboard';
import { ConfigError, parseTrustProxy } from '../../apps/core/src/config';
import { db } from '../../apps/core/src/db';
import { redis, rkey } from '../../apps/core/src/redis';
import { ADMIN_TOKEN, as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { listFixture } from '../lists/support';

const ctx = useApi();

/** The app on a real loopback port, for clients that write raw HTTP. */
async function listening(api: ApiApp): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer(api.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A client that sends its headers and the first bytes of a body it declares much longer, then holds the connection;
 * from `localAddress` (another loopback address is another client).
 */
function trickler(port: number, head: string, declared: number, type = 'application/json', localAddress = '127.0.0.1'): net.Socket {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  socket.on('error', () => undefined);
  socket.write(`${head}\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${declared}\r\n\r\n{"a":`);
  return socket;
}

/** The whole of a request written at once, and what came back; `reset` tells whether the connection was reset. */
function rawExchange(port: number, request: string, body: Buffer): Promise<{ answer: string; reset: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let reset = false;
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => (reset = true));
    socket.on('close', () => resolve({ answer, reset }));
    socket.write(request);
    socket.write(body);
    socket.end();
  });
}

const sendBody = { to: 'someone@example.com', subject: 'Hi', text: 'Hello' };

describe('strangers cannot starve paying clients', () => {
  it('64 trickled 1 MB bodies to an unknown route, the admin API without its token and a wrong key leave authenticated sends at 202', async () => {
    const tenant = await makeTenant();
    const server = await listening(ctx.api);
    const strangers: net.Socket[] = [];
    try {
      const targets = ['POST /nonexistent HTTP/1.1', 'POST /admin/api/accounts HTTP/1.1', `POST /api/v1/send HTTP/1.1\r\nAuthorization: Bearer msk_${'x'.repeat(32)}`];
      // from an address of their own: the paying client's address is not the one they lock out (failures.ts)
      for (let i = 0; i < 64; i++) strangers.push(trickler(server.port, targets[i % targets.length]!, 1024 * 1024, 'application/json', '127.0.0.2'));
      // every stranger has been answered (and holds its socket, trickling) before the paying client comes
      await new Promise((resolve) => setTimeout(resolve, 300));
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await request(`http://127.0.0.1:${server.port}`).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send(sendBody);
        statuses.push(res.status);
      }
      expect(statuses).toEqual(Array(20).fill(202));
    } finally {
      for (const socket of strangers) socket.destroy();
      await server.close();
    }
  });

  it("a stranger's form bodies share a small budget: past 64 KB held by one address, 503", async () => {
    const f = await listFixture(ctx.api);
    const server = await listening(ctx.api);
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) held.push(trickler(server.port, `POST /f/${f.list.key} HTTP/1.1`, 16_000, 'application/x-www-form-urlencoded'));
      await new Promise((resolve) => setTimeout(resolve, 200));
      const fifth = await request(`http://127.0.0.1:${server.port}`).post(`/f/${f.list.key}`).type('form').send(`email=a%40b.co&name=${'n'.repeat(15_900)}`);
      expect(fifth.status).toBe(503);
      expect(fifth.headers['retry-after']).toBe('1');
    } finally {
      for (const socket of held) socket.destroy();
      await server.close();
    }
    // once they let go, the form takes posts again
    const later = await request(ctx.api.app).post(`/f/${f.list.key}`).type('form').send('email=later%40example.com');
    expect(later.status).toBe(200);
  });

  it("the console's sign-in reads at most 4 KB of a stranger's form", async () => {
    const res = await request(ctx.api.app).post('/admin/signin').type('form').send(`token=${'t'.repeat(256 * 1024)}`);
    expect(res.status).toBe(413);
    expect(res.text).not.toContain('request id');
  });

  it('a refused body is read to its end, so the client reads the 401 instead of a reset (5 MB to /send, 2 MB to /mcp)', async () => {
    // an app of its own: the strangers above spent this address's failure allowance on the shared one
    const api = createApp(db());
    await api.start();
    const server = await listening(api);
    try {
      for (const [path, size] of [['/api/v1/send', 5 * 1024 * 1024], ['/mcp', 2 * 1024 * 1024]] as const) {
        const body = Buffer.alloc(size, 'a');
        const { answer, reset } = await rawExchange(server.port, `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`, body);
        expect({ path, status: answer.split('\r\n')[0], reset }).toEqual({ path, status: 'HTTP/1.1 401 Unauthorized', reset: false });
        expect(answer).toContain('"ok":false');
      }
    } finally {
      await server.close();
      await api.stop();
    }
  });
});

describe('one failed-authentication rule for every credential', () => {
  let api: ApiApp;
  beforeAll(async () => {
    // an app of its own: its failure counts start at zero
    api = createApp(db());
    await api.start();
  });
  afterAll(() => api.stop());

  it('counts missing and wrong keys, admin tokens, dashboard passwords and sign-ins together; past the allowance every credential is refused unchecked, the right ones included', async () => {
    const tenant = await makeTenant();
    const signinPage = request.agent(api.app);
    const page = await signinPage.get('/admin/signin');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    const failures = [
      await request(api.app).get('/api/v1/lists'),
      await request(api.app).get('/api/v1/lists').set('Authorization', 'Bearer not-a-key'),
      await request(api.app).get('/admin/api/accounts').set('Authorization', 'Bearer wrong-admin-token-0000'),
      await request(api.app).get(DASHBOARD_PATH).auth('admin', 'wrong-password'),
      await signinPage.post('/admin/signin').type('form').send({ _csrf: csrf, token: 'wrong' }),
    ];
    expect(failures.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    const past = [
      await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${'u'.repeat(32)}`),
      await request(api.app).post('/admin/api/accounts').set('Authorization', 'Bearer wrong-admin-token-0000').send({ name: 'x' }),
      await request(api.app).get(DASHBOARD_PATH).auth('admin', 'wrong-password'),
      await signinPage.post('/admin/signin').type('form').send({ _csrf: csrf, token: 'wrong' }),
      // the right credentials: refused alike, so the answer tells a guess nothing
      await as(api, tenant.token).get('/api/v1/lists'),
      await as(api, tenant.token).post('/api/v1/send').send(sendBody), // the fast lane's route
      await request(api.app).get('/admin/api/accounts').set('Authorization', `Bearer ${ADMIN_TOKEN}`),
      await request(api.app).get(DASHBOARD_PATH).auth('admin', ADMIN_TOKEN),
      await signinPage.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }),
    ];
    expect(past.map((r) => r.status)).toEqual([429, 429, 429, 429, 429, 429, 429, 429, 429]);
    for (const res of past) expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(past[0]!.body).toEqual({ ok: false, error: expect.stringContaining('failed authentications') });
    expect(past[5]!.body).toEqual({ ok: false, error: expect.stringContaining('failed authentications') });
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
  });

  it('refuses the right admin token unchecked once the guesses from its address are past the allowance', async () => {
    // the measure: guesses from one address, the right token among them
    const fresh = createApp(db());
    await fresh.start();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 200; i++) {
        const token = i === 150 ? ADMIN_TOKEN : `wrong-admin-token-${String(i).padStart(12, '0')}`;
        statuses.push((await request(fresh.app).get('/admin/api/accounts').set('Authorization', `Bearer ${token}`)).status);
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
    } finally {
      await fresh.stop();
    }
  });

  it('counts an IPv6 client by its /64: a fresh address of the same /64 brings no fresh allowance', async () => {
    const tenant = await makeTenant();
    const proxied = createApp(db());
    // the clients' addresses come from X-Forwarded-For, believed from the loopback proxy (TRUST_PROXY=loopback)
    proxied.app.set('trust proxy', 'loopback');
    await proxied.start();
    const from = (address: string) => ({ get: (token: string) => as(proxied, token).get('/api/v1/lists').set('X-Forwarded-For', address) });
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= 8; i++) statuses.push((await from(`2001:db8:7:7::${i.toString(16)}`).get(`msk_${String(i).padStart(32, 'v')}`)).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429]);
      expect((await from('2001:db8:7:7:ffff:ffff:ffff:fffe').get(tenant.token)).status).toBe(429);
      // the next /64 is another client, and so is an IPv4 address
      expect((await from('2001:db8:7:8::1').get(tenant.token)).status).toBe(200);
      expect((await from('203.0.113.9').get(tenant.token)).status).toBe(200);
    } finally {
      await proxied.stop();
    }
  });
});

describe('the failure rule, by the clock', () => {
  it('lets a locked-out client present a credential again once its window ends', async () => {
    const { AuthFailures } = await import('../../apps/api/src/middleware/failures');
    const { Unauthorized } = await import('../../apps/core/src/errors');
    const failures = new AuthFailures(3);
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) expect(failures.refuse('::ffff:198.51.100.7', new Unauthorized('no'), t0 + i).status).toBe(401);
    // IPv4-mapped and plain IPv4 are one client
    expect(failures.lockedOut('198.51.100.7', t0 + 10)).toMatchObject({ status: 429, headers: { 'Retry-After': '60' } });
    expect(failures.lockedOut('198.51.100.7', t0 + 59_999)).toMatchObject({ status: 429, headers: { 'Retry-After': '1' } });
    expect(failures.lockedOut('198.51.100.8', t0 + 10)).toBeNull();
    expect(failures.lockedOut('198.51.100.7', t0 + 60_000)).toBeNull();
    expect(failures.anyLockedOut(t0 + 60_000)).toBe(false);
    expect(failures.refuse('198.51.100.7', new Unauthorized('no'), t0 + 60_001).status).toBe(401);
  });
});

describe('X-Forwarded-For', () => {
  it('is not believed by default: rotating it from one address does not reset the failure limit', async () => {
    const api = createApp(db());
    await api.start();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${String(i).padStart(32, 'r')}`).set('X-Forwarded-For', `203.0.113.${i + 1}`);
        statuses.push(res.status);
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
    } finally {
      await api.stop();
    }
  });

  it('TRUST_PROXY takes none, a hop count, or addresses and ranges, and refuses anything else by name', () => {
    expect(parseTrustProxy(undefined)).toBe(false);
    expect(parseTrustProxy('')).toBe(false);
    expect(parseTrustProxy('false')).toBe(false);
    expect(parseTrustProxy('0')).toBe(false);
    expect(parseTrustProxy('2')).toBe(2);
    expect(parseTrustProxy('10.0.0.1, 192.168.0.0/16, ::1, loopback')).toEqual(['10.0.0.1', '192.168.0.0/16', '::1', 'loopback']);
    expect(() => parseTrustProxy('proxy.example.com')).toThrow(ConfigError);
    expect(() => parseTrustProxy('10.0.0.0/33')).toThrow(/"10\.0\.0\.0\/33"/);
    expect(() => parseTrustProxy('11')).toThrow(ConfigError);
  });
});

describe('the console before sign-in', () => {
  it('keeps nothing in Redis for a stranger loading the sign-in page, and signs in with the form it showed', async () => {
    // an app of its own: the apps above are processes of one deployment, and their guesses from this address count
    // against it on every one of them that was listening (AuthFailures.start)
    const fresh = createApp(db());
    await fresh.start();
    try {
      await consoleSignIn(fresh);
    } finally {
      await fresh.stop();
    }
  });
});

async function consoleSignIn(api: ApiApp): Promise<void> {
  const pattern = rkey('console', 'session', '*');
  const before = (await redis().keys(pattern)).length;
  for (let i = 0; i < 50; i++) expect((await request(api.app).get('/admin/signin')).status).toBe(200);
  expect((await redis().keys(pattern)).length).toBe(before);

  const browser = request.agent(api.app);
  const page = await browser.get('/admin/signin');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  // a token of another browser's form is refused
  const other = await request(api.app).get('/admin/signin');
  const otherCsrf = /name="_csrf" value="([^"]+)"/.exec(other.text)![1]!;
  expect((await browser.post('/admin/signin').type('form').send({ _csrf: otherCsrf, token: ADMIN_TOKEN })).status).toBe(403);
  const signedIn = await browser.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN });
  expect(signedIn.status).toBe(303);
  expect((await redis().keys(pattern)).length).toBe(before + 1);
  expect((await browser.get('/admin')).status).toBe(200);
  // a bad %-escape in a signed-in page's address is the client's mistake, not a fault
  const bad = await browser.get('/admin/lists/%E0%A4%A');
  expect(bad.status).toBe(400);
  expect(bad.text).not.toContain('Something went wrong');
}
