import http from 'node:http';
import net from 'node:net';
import { SERVER_TIMEOUTS, configureServer } from '../../apps/api/src/edge';
import { config } from '../../apps/core/src/config';
import { useApi } from '../helpers/api';

// 300 refusals from one address in a minute: the failed-authentication rule would answer 429 past 20 (failures.ts)
process.env.AUTH_FAILURES_PER_MINUTE = '1000000';

const ctx = useApi();

let server: http.Server;
let port: number;

beforeAll(async () => {
  server = configureServer(http.createServer(ctx.api.app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('behind a load balancer', () => {
  it('keeps idle connections longer than the balancers (60 s), and still cuts off slow headers quickly', () => {
    expect(server.keepAliveTimeout).toBe(SERVER_TIMEOUTS.keepAliveTimeoutMs);
    expect(server.keepAliveTimeout).toBeGreaterThan(60_000);
    expect(server.headersTimeout).toBe(10_000);
    expect(server.requestTimeout).toBe(30_000);
  });

  it('lets a kept-alive connection idle past the headers and request timeouts and serves its next request', async () => {
    // the same settings with short headers/request timeouts, checked often, so the test can idle past them
    const short = configureServer(http.createServer({ connectionsCheckingInterval: 100 }, ctx.api.app), {
      ...SERVER_TIMEOUTS,
      headersTimeoutMs: 500,
      requestTimeoutMs: 800,
    });
    await new Promise<void>((resolve) => short.listen(0, '127.0.0.1', resolve));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const get = () =>
        new Promise<{ status: number; socket: net.Socket }>((resolve, reject) => {
          const req = http.get({ port: (short.address() as net.AddressInfo).port, host: '127.0.0.1', path: '/healthz', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, socket: req.socket! }));
          });
          req.on('error', reject);
        });
      const first = await get();
      const idleUntil = Date.now() + 1500; // three times the headers timeout, twice the request timeout
      await new Promise<void>((resolve) => {
        const tick = () => (Date.now() >= idleUntil || first.socket.destroyed ? resolve() : void setTimeout(tick, 50).unref());
        tick();
      });
      expect(first.socket.destroyed).toBe(false);
      const second = await get();
      expect(second.socket).toBe(first.socket);
      expect([first.status, second.status]).toEqual([200, 200]);
    } finally {
      agent.destroy();
      short.closeAllConnections();
      await new Promise((resolve) => short.close(resolve));
    }
  });
});

/**
 * POST a 1 MB JSON body on a connection of its own the way a blocking client does: the whole body is written (in 16 KB
 * pieces, each once the last one is in the kernel) before the answer is read. A server that closed the connection
 * with the body unread makes the kernel reset it, and the reset throws away the answer not yet read: the client sees
 * ECONNRESET or EPIPE instead of its 401.
 */
function postMegabyte(path: string, authorization: string | undefined): Promise<string> {
  const body = Buffer.alloc(1024 * 1024, ' ');
  body.write('{"to":"a@example.com","pad":"');
  body.write('"}', body.length - 2);
  const head =
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
    (authorization ? `Authorization: ${authorization}\r\n` : '') +
    'Connection: close\r\n\r\n';
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.pause();
    let text = '';
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code ?? err.message}`));
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('end', () => resolve(text));
    const write = (offset: number) => {
      if (offset >= body.length) return void socket.resume();
      socket.write(body.subarray(offset, offset + 16 * 1024), (err) => {
        if (!err) write(offset + 16 * 1024);
      });
    };
    socket.write(head, (err) => {
      if (!err) write(0);
    });
  });
}

/** `401 false` for a JSON 401 refusal; otherwise what came (a status line, or the error). */
function summary(answer: string): string {
  const status = /^HTTP\/1\.1 (\d+)/.exec(answer)?.[1];
  if (!status) return answer.slice(0, 80);
  const json = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  try {
    return `${status} ${(JSON.parse(json) as { ok: unknown }).ok}`;
  } catch {
    return `${status} ${json.slice(0, 60)}`;
  }
}

describe('a refused 1 MB body', () => {
  const routes = [
    ['the fast lane', '/api/v1/send'],
    ['the fast lane', '/api/v1/subscribers'],
    ['Express', '/api/v1/lists'],
  ] as const;

  it.each(routes)('%s: %s answers its 401 to the client every time (50 tries without a key, 50 with an unknown one)', async (_side, path) => {
    expect(config().authFailuresPerMinute).toBe(1_000_000);
    const laneBefore = ctx.api.state.lane.answered;
    const answers: string[] = [];
    for (let i = 0; i < 50; i++) {
      for (const authorization of [undefined, `Bearer msk_${'z'.repeat(32)}`]) {
        answers.push(summary(await postMegabyte(path, authorization)));
      }
    }
    expect(answers.filter((a) => a !== '401 false')).toEqual([]);
    expect(answers).toHaveLength(100);
    // the lane hands requests without a valid key to Express, which refuses them
    expect(ctx.api.state.lane.answered).toBe(laneBefore);
  });
});
