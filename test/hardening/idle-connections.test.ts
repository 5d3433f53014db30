import http from 'node:http';
import net from 'node:net';
import { SERVER_TIMEOUTS, configureServer, type ConnectionLimits } from '../../apps/api/src/edge';
import { useApi } from '../helpers/api';
import { waitFor } from '../helpers/wait';

/**
 * Idle connections end (docs/hardening.md): a connection that sends no whole request head within firstRequestMs is
 * closed, and one client (an IPv4 address, an IPv6 /64) holds at most so many connections open on the API's port.
 */
const ctx = useApi();

/** The app served with the server's settings, a short first-request deadline, and `connections`. */
async function serve(firstRequestMs: number, connections?: ConnectionLimits): Promise<{ port: number; server: http.Server; close: () => Promise<void> }> {
  const server = configureServer(http.createServer(ctx.api.app), { ...SERVER_TIMEOUTS, firstRequestMs }, connections);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    server,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A connection from `localAddress` that records what it reads and when it is closed. */
function connect(port: number, localAddress = '127.0.0.1'): { socket: net.Socket; read: () => string; closed: () => boolean } {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  let text = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  return { socket, read: () => text, closed: () => closed };
}

describe('a connection that sends no request', () => {
  it('is closed within a few seconds by default', () => {
    expect(SERVER_TIMEOUTS.firstRequestMs).toBeLessThanOrEqual(5_000);
  });

  it('is closed after the first-request deadline: 200 silent ones and a trickled head, while a served one stays kept alive', async () => {
    const { port, server, close } = await serve(1_000);
    try {
      const silent = Array.from({ length: 200 }, () => connect(port));
      const trickled = connect(port);
      trickled.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
      const served = connect(port);
      served.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => served.read().includes('\r\n\r\n'), { what: 'the served request' });
      await waitFor(() => silent.every((c) => c.closed()) && trickled.closed(), { timeout: 10_000, what: 'the idle connections to be closed' });
      expect(await new Promise<number>((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))))).toBe(1);
      // the request it sent cleared the deadline: past it, the kept-alive connection serves its next request
      expect(served.closed()).toBe(false);
      served.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => served.read().split('HTTP/1.1 ').length === 3, { what: 'the second answer' });
      expect(served.read().split('HTTP/1.1 ').slice(1).map((a) => a.slice(0, 3))).toEqual(['200', '200']);
      served.socket.destroy();
    } finally {
      await close();
    }
  }, 20_000);
});

describe('connections per client', () => {
  it('answers a client past its cap 503 and closes the connection; another client, and the same one once it lets go, are served', async () => {
    const { port, close } = await serve(10_000, { perClient: 10 });
    try {
      const held = Array.from({ length: 10 }, () => connect(port, '127.0.6.1'));
      await waitFor(() => held.every((c) => c.socket.readyState === 'open'), { what: 'the connections to open' });
      const past = connect(port, '127.0.6.1');
      await waitFor(() => past.closed(), { what: 'the connection past the cap to be closed' });
      expect(past.read()).toMatch(/^HTTP\/1\.1 503 /);
      expect(JSON.parse(past.read().split('\r\n\r\n')[1]!)).toEqual({ ok: false, error: 'too many connections from your address; try again later' });

      const other = connect(port, '127.0.6.2');
      other.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => other.read().includes('\r\n\r\n'), { what: "another client's answer" });
      expect(other.read()).toMatch(/^HTTP\/1\.1 200 /);
      other.socket.destroy();

      held[0]!.socket.destroy();
      await waitFor(() => held[0]!.closed(), { what: 'one connection to close' });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = connect(port, '127.0.6.1');
      again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => again.read().includes('\r\n\r\n'), { what: 'the answer once a connection was let go' });
      expect(again.read()).toMatch(/^HTTP\/1\.1 200 /);
      for (const c of [...held, again]) c.socket.destroy();
    } finally {
      await close();
    }
  });

  it('does not count the connections of a proxy the operator trusts', async () => {
    const { port, close } = await serve(10_000, { perClient: 3, trusted: (address) => address === '127.0.6.3' });
    try {
      const proxied = Array.from({ length: 8 }, () => connect(port, '127.0.6.3'));
      for (const c of proxied) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor(() => proxied.every((c) => c.read().includes('\r\n\r\n')), { what: 'the proxied answers' });
      expect(proxied.map((c) => c.read().slice(9, 12))).toEqual(proxied.map(() => '200'));
      for (const c of proxied) c.socket.destroy();
    } finally {
      await close();
    }
  });
});
