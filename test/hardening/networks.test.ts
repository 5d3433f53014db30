import http from 'node:http';
import net from 'node:net';
import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { clientOf } from '../../apps/api/src/middleware/client';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { db } from '../../apps/core/src/db';
import { FORM_POSTS_PER_CLIENT, UNSUBSCRIBE_POSTS_PER_CLIENT } from '../../apps/core/src/subscribers/limit';
import { useApi } from '../helpers/api';
import { waitFor } from '../helpers/wait';
import { address, listFixture } from '../lists/support';

/**
 * The public pages' limits count clients by network (docs/hardening.md): an IPv4 address, or an IPv6 /64, whichever
 * address of it a request comes from; and the one-click unsubscribe answers whatever strangers do.
 */
const ctx = useApi();

/** An app whose clients' addresses come from X-Forwarded-For, believed from the loopback proxy (TRUST_PROXY=loopback). */
async function behindProxy(): Promise<{ api: ApiApp; port: number; close: () => Promise<void> }> {
  const api = createApp(db());
  api.app.set('trust proxy', 'loopback');
  await api.start();
  const server = http.createServer(api.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    api,
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await api.stop();
    },
  };
}

/** A client that announces a body of `declared` bytes and sends its first bytes only, then holds the connection. */
function trickler(port: number, path: string, declared: number, from: { localAddress?: string; forwardedFor?: string }): net.Socket {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: from.localAddress });
  socket.on('error', () => undefined);
  socket.resume();
  const forwarded = from.forwardedFor ? `X-Forwarded-For: ${from.forwardedFor}\r\n` : '';
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${forwarded}Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${declared}\r\n\r\nList-`);
  return socket;
}

/** A mailbox provider's RFC 8058 one-click post from `localAddress`: its status and how long it took. */
function oneClick(port: number, path: string, localAddress: string): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const body = 'List-Unsubscribe=One-Click';
  return new Promise((resolve, reject) => {
    const req = http.request({ port, host: '127.0.0.1', localAddress, method: 'POST', path, agent: false, headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': body.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: Date.now() - started }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('which client a request is', () => {
  it('is an IPv4 address as it is, and an IPv6 address by its /64, whatever address of the /64 it uses', () => {
    const of = (remoteAddress: string, ip?: string) => clientOf({ socket: { remoteAddress }, ip } as unknown as http.IncomingMessage);
    expect(of('2001:db8:1:2::1')).toBe(of('2001:db8:1:2:ffff:ffff:ffff:fffe'));
    expect(of('2001:db8:1:2::1')).not.toBe(of('2001:db8:1:3::1'));
    expect(of('::ffff:198.51.100.7')).toBe('198.51.100.7');
    expect(of('198.51.100.7')).not.toBe(of('198.51.100.8'));
    // Express's req.ip (TRUST_PROXY) wins over the socket's
    expect(of('127.0.0.1', '2001:db8:9:9::5')).toBe(of('::1', '2001:db8:9:9::6'));
  });
});

describe('the hosted form by network', () => {
  it('counts the 20 posts a client may make by /64: fresh addresses of one /64 bring no fresh allowance', async () => {
    const f = await listFixture(ctx.api, { confirm: true });
    const proxied = await behindProxy();
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= FORM_POSTS_PER_CLIENT + 2; i++) {
        const res = await request(proxied.api.app).post(`/f/${f.list.key}`).set('X-Forwarded-For', `2001:db8:40:1::${i.toString(16)}`).type('form').send(`email=${encodeURIComponent(address(`v6-${i}`))}`);
        statuses.push(res.status);
      }
      expect(statuses.slice(0, FORM_POSTS_PER_CLIENT).every((s) => s === 200)).toBe(true);
      expect(statuses.slice(FORM_POSTS_PER_CLIENT)).toEqual([429, 429]);
      // nobody past the allowance was signed up: 20 people, not 22
      expect(await db().subscriber.count({ where: { listId: f.list.id } })).toBe(FORM_POSTS_PER_CLIENT);
      // another /64 is another client
      const other = await request(proxied.api.app).post(`/f/${f.list.key}`).set('X-Forwarded-For', '2001:db8:40:2::1').type('form').send(`email=${encodeURIComponent(address('v6-other'))}`);
      expect(other.status).toBe(200);
    } finally {
      await proxied.close();
    }
  });

  it("holds one /64's trickled form bodies to one client's share of the budget", async () => {
    const f = await listFixture(ctx.api);
    const proxied = await behindProxy();
    const held: net.Socket[] = [];
    try {
      for (let i = 1; i <= 4; i++) held.push(trickler(proxied.port, `/f/${f.list.key}`, 16_000, { forwardedFor: `2001:db8:41:1::${i}` }));
      await waitFor(() => held.every((s) => s.bytesWritten > 0), { what: 'the strangers to connect' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const fifth = await request(`http://127.0.0.1:${proxied.port}`).post(`/f/${f.list.key}`).set('X-Forwarded-For', '2001:db8:41:1:abcd::9').type('form').send(`email=a%40b.co&name=${'n'.repeat(15_900)}`);
      expect(fifth.status).toBe(503);
      const elsewhere = await request(`http://127.0.0.1:${proxied.port}`).post(`/f/${f.list.key}`).set('X-Forwarded-For', '2001:db8:41:2::9').type('form').send(`email=${encodeURIComponent(address('elsewhere'))}`);
      expect(elsewhere.status).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
      await proxied.close();
    }
  });
});

describe('the one-click unsubscribe under strangers', () => {
  it('answers every one-click post 200 while 40 addresses trickle 512-byte bodies at it, and reads no body', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const readers = Array.from({ length: 10 }, (_, i) => address(`reader-${i}`));
    for (const email of readers) expect((await f.subscribe({ email })).status).toBe(200);
    const ids = await Promise.all(readers.map(async (email) => (await f.subscriber(email))!.id));
    const server = http.createServer(ctx.api.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const strangers: net.Socket[] = [];
    try {
      for (let a = 2; a < 42; a++) for (let i = 0; i < 4; i++) strangers.push(trickler(port, `/u/${unsubscribeToken(900_000 + a)}`, 512, { localAddress: `127.0.3.${a}` }));
      await waitFor(() => strangers.every((s) => s.bytesWritten > 0), { what: 'the strangers to connect' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      const answers = [];
      for (const id of ids) answers.push(await oneClick(port, `/u/${unsubscribeToken(id)}`, '127.0.4.1'));
      expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200));
      for (const email of readers) expect((await f.subscriber(email))!.status).toBe('unsubscribed');
    } finally {
      for (const socket of strangers) socket.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);

  it('answers a one-click post whose body is long or never comes, without reading it', async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const reader = address('long-body');
    expect((await f.subscribe({ email: reader })).status).toBe(200);
    const id = (await f.subscriber(reader))!.id;
    const server = http.createServer(ctx.api.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const socket = trickler(port, `/u/${unsubscribeToken(id)}`, 100_000, { localAddress: '127.0.4.2' });
      let answer = '';
      socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      await waitFor(() => answer.includes('\r\n\r\n'), { what: 'the answer before the body' });
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
      expect((await f.subscriber(reader))!.status).toBe('unsubscribed');
      socket.destroy();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('counts one /64 as one client for its post rate', async () => {
    const proxied = await behindProxy();
    try {
      const statuses: number[] = [];
      for (let i = 1; i <= UNSUBSCRIBE_POSTS_PER_CLIENT + 1; i++) {
        const res = await request(proxied.api.app).post(`/u/${unsubscribeToken(800_000 + i)}`).set('X-Forwarded-For', `2001:db8:42:1::${i.toString(16)}`).type('form').send('List-Unsubscribe=One-Click');
        statuses.push(res.status);
      }
      // unknown links (404), then the rate's refusal
      expect(statuses.slice(0, UNSUBSCRIBE_POSTS_PER_CLIENT).every((s) => s === 404)).toBe(true);
      expect(statuses[UNSUBSCRIBE_POSTS_PER_CLIENT]).toBe(429);
      const other = await request(proxied.api.app).post(`/u/${unsubscribeToken(800_000)}`).set('X-Forwarded-For', '2001:db8:42:2::1').type('form').send('List-Unsubscribe=One-Click');
      expect(other.status).toBe(404);
    } finally {
      await proxied.close();
    }
  });
});
