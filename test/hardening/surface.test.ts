import http from 'node:http';
import net from 'node:net';
import request from 'supertest';
import { DASHBOARD_PATH } from '../../apps/api/src/dashboard';
import { DRAIN_IDLE_MS } from '../../apps/api/src/middleware/unread-body';
import { createApp } from '../../apps/api/src/app';
import { config } from '../../apps/core/src/config';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { address, listFixture } from '../lists/support';

const ctx = useApi();

describe('authentication before the body', () => {
  it('an unknown key is refused as soon as the headers arrive, without waiting for the 1 MB body', async () => {
    const server = http.createServer(ctx.api.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        let text = '';
        const timer = setTimeout(() => reject(new Error(`no answer before the body was sent: ${text}`)), 8000);
        socket.on('data', (chunk) => {
          text += chunk.toString();
          if (text.includes('\r\n\r\n') && text.includes('"ok"')) {
            clearTimeout(timer);
            resolve(text);
          }
        });
        socket.on('error', reject);
        socket.write(
          `POST /api/v1/send HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer msk_${'z'.repeat(32)}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"to":`,
        );
      });
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      // and the server lets go of a connection whose body stopped coming, instead of waiting at the client's pace
      await new Promise<void>((resolve, reject) => {
        if (socket.readableEnded) return resolve();
        const timer = setTimeout(() => reject(new Error('the server kept the connection open')), DRAIN_IDLE_MS + 3000);
        socket.on('end', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    } finally {
      socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the hosted form', () => {
  it('takes the honeypot filled even when the field is sent twice (website=&website=x)', async () => {
    const f = await listFixture(ctx.api);
    const email = address('bot');
    const res = await request(ctx.api.app).post(`/f/${f.list.key}`).type('form').send(`email=${encodeURIComponent(email)}&website=&website=x`);
    expect(res.status).toBe(200);
    expect(await f.subscriber(email)).toBeNull();
    expect(await db().message.count({ where: { to: email } })).toBe(0);
  });

  it('pages may not be framed', async () => {
    const f = await listFixture(ctx.api);
    const res = await request(ctx.api.app).get(`/f/${f.list.key}`);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });
});

describe('the queue dashboard', () => {
  const basic = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`;

  it('may not be framed', async () => {
    const res = await request(ctx.api.app).get(`${DASHBOARD_PATH}/`).set('Authorization', basic);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  it('refuses a cross-site write made with remembered credentials', async () => {
    const fromOrigin = await request(ctx.api.app)
      .put(`${DASHBOARD_PATH}/api/queues/send/pause`)
      .set('Authorization', basic)
      .set('Origin', 'https://evil.example');
    expect(fromOrigin.status).toBe(403);
    expect(fromOrigin.body).toEqual({ ok: false, error: 'cross-site writes are refused' });
    const fetchSite = await request(ctx.api.app)
      .post(`${DASHBOARD_PATH}/api/queues/send/retry/failed`)
      .set('Authorization', basic)
      .set('Sec-Fetch-Site', 'cross-site');
    expect(fetchSite.status).toBe(403);
  });
});

describe('field merge', () => {
  it('keeps fields named like built-in properties (toString, constructor) on a repeated add', async () => {
    const f = await listFixture(ctx.api);
    const email = address();
    await f.subscribe({ email, confirmed: true, fields: { constructor: 'x', toString: 'y' } });
    await f.subscribe({ email, fields: { plan: 'pro' } });
    expect((await f.subscriber(email))?.fields).toEqual({ constructor: 'x', toString: 'y', plan: 'pro' });
  });
});

describe('the access log', () => {
  it('records the whole address with the confirmation token redacted', async () => {
    const { logger } = await import('../../apps/core/src/logger');
    const spy = jest.spyOn(logger, 'info');
    try {
      const token = 'ct_' + 'q'.repeat(40);
      await request(ctx.api.app).get(`/confirm/${token}?utm=x`);
      await request(ctx.api.app).get('/admin/api/messages?limit=1').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      const lines = spy.mock.calls.map((call) => JSON.stringify(call[0])).filter((line) => line.includes('requestId'));
      expect(lines.some((line) => line.includes('"url":"/confirm/[redacted]?utm=x"'))).toBe(true);
      expect(lines.some((line) => line.includes('"url":"/admin/api/messages?limit=1"'))).toBe(true);
      expect(lines.join('\n')).not.toContain(token);
    } finally {
      spy.mockRestore();
    }
  });

  it('redacts the token of a path in any letter case and secret-looking query values', async () => {
    const { redactedUrl } = await import('../../apps/api/src/middleware/request');
    expect(redactedUrl('/CONFIRM/abc123?x=1')).toBe('/CONFIRM/[redacted]?x=1');
    expect(redactedUrl('/U/7.abc')).toBe('/U/[redacted]');
    expect(redactedUrl('/x?api_key=k1&access_token=t2&Password=p3&keep=me&client-secret=s4')).toBe(
      '/x?api_key=[redacted]&access_token=[redacted]&Password=[redacted]&keep=me&client-secret=[redacted]',
    );
    const { logger } = await import('../../apps/core/src/logger');
    const spy = jest.spyOn(logger, 'info');
    try {
      await request(ctx.api.app).get(`/Confirm/${'s'.repeat(32)}`);
      const lines = spy.mock.calls.map((call) => JSON.stringify(call[0])).filter((line) => line.includes('requestId'));
      expect(lines.join('\n')).not.toContain('s'.repeat(32));
    } finally {
      spy.mockRestore();
    }
  });
});

describe('the access log keeps no secret', () => {
  it('redacts the token of every public page (confirm, unsubscribe, click, open), whatever slashes stand around it', async () => {
    const { redactedUrl } = await import('../../apps/api/src/middleware/request');
    expect(redactedUrl('/u//7.abcdef')).toBe('/u//[redacted]');
    expect(redactedUrl('//u/7.abcdef?x=1')).toBe('//u/[redacted]?x=1');
    expect(redactedUrl('/c/AAAA.aHR0cHM6.sig')).toBe('/c/[redacted]');
    expect(redactedUrl('/O/AAAA.sig.gif')).toBe('/O/[redacted]');
    expect(redactedUrl('/%75/7.abcdef')).toBe('/%75/[redacted]');
    expect(redactedUrl('/confirm///tok')).toBe('/confirm///[redacted]');
    // the hosted form's key is public (it is in every embedded form), and other paths are kept whole
    expect(redactedUrl('/f/abc123')).toBe('/f/abc123');
    expect(redactedUrl('/admin/api/lists/7')).toBe('/admin/api/lists/7');
    expect(redactedUrl('/x?pw=p1&session=s2&sid=s3&PWD=p4&csrf_token=c5&session[id]=s6&page=2')).toBe(
      '/x?pw=[redacted]&session=[redacted]&sid=[redacted]&PWD=[redacted]&csrf_token=[redacted]&session[id]=[redacted]&page=2',
    );
  });

  it('writes no token, password or session value into any line of a request', async () => {
    const { logger } = await import('../../apps/core/src/logger');
    const lines: string[] = [];
    const spies = (['info', 'warn', 'error', 'debug'] as const).map((level) =>
      jest.spyOn(logger, level).mockImplementation(((obj: unknown) => void lines.push(JSON.stringify(obj))) as never),
    );
    const secrets = ['S3cretUnsub' + 'u'.repeat(20), 'S3cretClick' + 'c'.repeat(20), 'S3cretOpen' + 'o'.repeat(20), 'pw-S3cret', 'session-S3cret'];
    try {
      await request(ctx.api.app).get(`/u//7.${secrets[0]}`);
      await request(ctx.api.app).get(`/c/${secrets[1]}`);
      await request(ctx.api.app).get(`/o/${secrets[2]}.gif`);
      await request(ctx.api.app).get(`/admin/signin?pw=${secrets[3]}&session=${secrets[4]}`).set('Cookie', `ms_console=${secrets[4]}`);
      expect(lines.filter((line) => line.includes('requestId'))).toHaveLength(4);
      for (const secret of secrets) expect(lines.join('\n')).not.toContain(secret);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('redacts cookies and authorization headers wherever a line carries them', async () => {
    const { Writable } = await import('node:stream');
    const pino = (await import('pino')).default;
    const { REDACT } = await import('../../apps/core/src/logger');
    let written = '';
    const sink = new Writable({ write: (chunk: Buffer, _enc, done) => ((written += chunk.toString()), done()) });
    // the service's redaction, onto a stream the test reads
    const probe = pino({ level: 'info', redact: REDACT }, sink);
    probe.info({ req: { headers: { cookie: 'ms_console=c1', authorization: 'Bearer a1' } }, headers: { cookie: 'c2', 'set-cookie': 'ms_console=c3' }, cookie: 'c4' }, 'x');
    probe.info({ response: { headers: { 'set-cookie': 'ms_console=c5', cookie: 'c6' } } }, 'y');
    expect(written).toContain('[redacted]');
    for (const secret of ['c1', 'a1', 'c2', 'c3', 'c4', 'c5', 'c6']) expect(written).not.toContain(`${secret}"`);
  });
});

describe('failed authentication', () => {
  it('an unknown key repeated costs one lookup, not one per request', async () => {
    const { KeyAuthenticator } = await import('../../apps/api/src/middleware/auth');
    let lookups = 0;
    const counting = {
      apiKey: {
        findUnique: (args: Parameters<ReturnType<typeof db>['apiKey']['findUnique']>[0]) => {
          lookups++;
          return db().apiKey.findUnique(args);
        },
      },
    } as unknown as ReturnType<typeof db>;
    const auth = new KeyAuthenticator(counting);
    const token = `msk_${'n'.repeat(32)}`;
    for (let i = 0; i < 5; i++) expect(await auth.authenticate(token)).toBeNull();
    expect(lookups).toBe(1);
  });

  it('past the failure limit one address gets 429 for every key, a valid one included', async () => {
    const FAILURES_PER_WINDOW = config().authFailuresPerMinute;
    const { makeTenant } = await import('../helpers/factories');
    const tenant = await makeTenant();
    // an app of its own: the address's allowance on the shared one stays for the tests after this
    const api = createApp(db());
    await api.start();
    try {
      const statuses: number[] = [];
      for (let i = 0; i <= FAILURES_PER_WINDOW + 2; i++) {
        const res = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${String(i).padStart(32, 'f')}`);
        statuses.push(res.status);
        if (res.status === 429) {
          expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
          expect(res.body).toEqual({ ok: false, error: expect.stringContaining('failed authentications') });
        }
      }
      expect(statuses.slice(0, FAILURES_PER_WINDOW)).toEqual(Array(FAILURES_PER_WINDOW).fill(401));
      expect(statuses.slice(FAILURES_PER_WINDOW)).toEqual([429, 429, 429]);
      const valid = await request(api.app).get('/api/v1/lists').set('Authorization', `Bearer ${tenant.token}`);
      expect(valid.status).toBe(429);
    } finally {
      await api.stop();
    }
  });
});

describe('the hosted form is no relay', () => {
  it('puts no typed text but a plain short name in the confirmation email', async () => {
    const f = await listFixture(ctx.api);
    const email = address('relay');
    const name = 'Win big\nhttps://spam.example/prize';
    const res = await request(ctx.api.app).post(`/f/${f.list.key}`).type('form').send({ email, name });
    expect(res.status).toBe(200);
    const message = await db().message.findFirstOrThrow({ where: { to: email } });
    expect(`${message.subject} ${message.text} ${message.html}`).not.toMatch(/spam\.example|Win big/);
  });

  it('limits the posts of one client address: past the limit a 429 page, and nothing stored or sent', async () => {
    const { FORM_POSTS_PER_CLIENT } = await import('../../apps/core/src/subscribers/limit');
    const f = await listFixture(ctx.api);
    const statuses: number[] = [];
    for (let i = 0; i < FORM_POSTS_PER_CLIENT + 2; i++) {
      statuses.push((await request(ctx.api.app).post(`/f/${f.list.key}`).type('form').send({ email: address(`c${i}`) })).status);
    }
    const first = statuses.indexOf(429);
    expect(first).toBeGreaterThan(0);
    expect(statuses.slice(first).every((s) => s === 429)).toBe(true);
    expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(first);
  });
});
