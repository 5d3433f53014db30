import net from 'node:net';
import request from 'supertest';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';
import { useSubmission } from '../smtp/support';

/**
 * One failed-authentication allowance per client for the whole deployment (docs/hardening.md): the API process and the
 * SMTP submission process, each with its own AuthFailures as their mains make them, count each other's failures through
 * Redis. A guesser locked out of SMTP AUTH is locked out of the HTTP API, and the reverse.
 */
process.env.AUTH_FAILURES_PER_MINUTE = '4';

const ctx = useApi();
const smtp = useSubmission({ failuresPerMinute: 4, allowInsecureAuth: true });

/** An AUTH PLAIN attempt in the clear from `localAddress`: the server's answer code. */
async function smtpLogin(port: number, token: string, localAddress: string): Promise<number> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  const reply = (pattern: RegExp) => waitFor(() => text.split('\r\n').find((l) => pattern.test(l)), { what: `a reply ${pattern}` });
  try {
    await reply(/^220 /);
    socket.write('EHLO client.example\r\n');
    await reply(/^250 /);
    text = '';
    socket.write(`AUTH PLAIN ${Buffer.from(`\0app\0${token}`).toString('base64')}\r\n`);
    return Number((await reply(/^\d{3} /)).slice(0, 3));
  } finally {
    socket.destroy();
  }
}

describe('one allowance for SMTP and HTTP', () => {
  it('locks a client out of the HTTP API once its SMTP logins failed past the allowance, the right key included', async () => {
    const tenant = await makeTenant();
    expect((await as(ctx.api, tenant.token).get('/api/v1/lists')).status).toBe(200);
    // supertest's requests come from 127.0.0.1: so do these logins
    for (let i = 0; i < 4; i++) expect(await smtpLogin(smtp.port, `msk_${String(i).padStart(32, 's')}`, '127.0.0.1')).toBe(535);
    await waitFor(async () => ((await as(ctx.api, tenant.token).get('/api/v1/lists')).status === 429 ? true : undefined), { what: 'the API to count the SMTP failures' });
    const locked = await as(ctx.api, tenant.token).get('/api/v1/lists');
    expect(locked.status).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('refuses SMTP AUTH with the right key once the client failed on the HTTP API past the allowance', async () => {
    const tenant = await makeTenant();
    // the clients' addresses come from X-Forwarded-For, believed from the loopback proxy
    ctx.api.app.set('trust proxy', 'loopback');
    try {
      expect(await smtpLogin(smtp.port, tenant.token, '127.0.0.7')).toBe(235);
      for (let i = 0; i < 4; i++) {
        const res = await request(ctx.api.app).get('/api/v1/lists').set('Authorization', `Bearer msk_${String(i).padStart(32, 'h')}`).set('X-Forwarded-For', '127.0.0.7');
        expect(res.status).toBe(401);
      }
      await waitFor(async () => ((await smtpLogin(smtp.port, tenant.token, '127.0.0.7')) === 421 ? true : undefined), { what: 'SMTP to count the API failures' });
      // another client is not locked out
      expect(await smtpLogin(smtp.port, tenant.token, '127.0.0.8')).toBe(235);
    } finally {
      ctx.api.app.set('trust proxy', false);
    }
  });
});

