import http from 'node:http';
import net from 'node:net';
import { useApi } from '../helpers/api';

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
    try {
      expect(await refused()).toBe(401);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const after1 = sockets[0]!.listenerCount('close');
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push(await refused());
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(sockets).toHaveLength(1);
      expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
      // before the fix every refusal left a 'close' listener holding its request: 31 of them here
      expect(sockets[0]!.listenerCount('close')).toBe(after1);
    } finally {
      agent.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
