import http from 'node:http';
import net from 'node:net';
import { useApi } from '../helpers/api';
import { waitFor } from '../helpers/wait';

// a file of its own: its 31 refusals spend the failed-authentication window of the address (middleware/failures.ts),
// which surface.test.ts's own limit test counts on
const ctx = useApi();

describe('refused bodies on a kept-alive connection', () => {
  it('leave nothing behind on the socket: each drain lets go of its request when the body ends', async () => {
    const server = http.createServer(ctx.api.app);
    const sockets: net.Socket[] = [];
    server.on('connection', (socket) => sockets.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const refused = () =>
      new Promise<number>((resolve, reject) => {
        const body = JSON.stringify({ to: 'a@example.com', subject: 's', text: 'x'.repeat(2000) });
        const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/api/v1/send', agent, headers: { Authorization: 'Bearer nope', 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        // the headers first and the body a moment later, so the refusal is written before the body is read
        req.flushHeaders();
        setTimeout(() => req.end(body), 20);
      });
    const closeListeners = () => sockets[0]!.listenerCount('close');
    try {
      expect(await refused()).toBe(401);
      // the body goes 20 ms after the headers and its drain lets go when it ends, which a loaded machine may take
      // longer than that to read: the count at rest is the one that holds over three looks 50 ms apart
      let after1 = -1;
      let still = 0;
      await waitFor(
        () => {
          const now = closeListeners();
          still = now === after1 ? still + 1 : 0;
          after1 = now;
          return still >= 3;
        },
        { interval: 50, timeout: 5_000, what: 'the close listeners of the first refusal to settle' },
      );
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push(await refused());
      expect(sockets).toHaveLength(1);
      expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
      // before the fix every refusal left a 'close' listener holding its request until the client hung up: 31 of
      // them here, which no wait lets go; the last refusal's drain may still be reading its body for a moment
      await waitFor(
        () => {
          if (closeListeners() > after1) throw new Error(`${closeListeners()} close listeners, ${after1} at rest`);
          return true;
        },
        { interval: 50, timeout: 3_000, what: 'the refusals to let go of the socket' },
      );
      expect(closeListeners()).toBe(after1);
    } finally {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
