import http from 'node:http';
import net from 'node:net';
import { PUBLIC_BODY_DEADLINE_MS } from '../../apps/api/src/app';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { useListeningApi } from '../helpers/api';
import { waitFor } from '../helpers/wait';
import { address, listFixture } from '../lists/support';

/**
 * The public pages under a stranger's load: 80 hosted-form bodies of 16 KB trickled from 16 client addresses
 * (127.0.0.2 to 127.0.0.17, each its own address for the per-address shares) leave a person's sign-up and a mailbox
 * provider's one-click unsubscribe answered; and the trickled bodies are cut off after PUBLIC_BODY_DEADLINE_MS.
 */
const ctx = useListeningApi();

/** A client at `from` that announces a 16 KB form body and sends its first bytes only. */
function trickler(from: string, path: string): net.Socket {
  const socket = net.connect({ port: ctx.port, host: '127.0.0.1', localAddress: from });
  socket.on('error', () => undefined);
  // reads what comes (a 503 page for those past their address's share), so the server's end is seen
  socket.resume();
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${16 * 1024}\r\n\r\nemail=`);
  return socket;
}

/** A form post from `from`, answered: its status and page. */
function post(from: string, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ port: ctx.port, host: '127.0.0.1', localAddress: from, method: 'POST', path, agent: false, headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('strangers trickling form bodies', () => {
  it("leave a stranger's sign-up and a one-click unsubscribe answered, and are cut off after a few seconds", async () => {
    const f = await listFixture(ctx.api, { confirm: false });
    const reader = address('reader');
    expect((await f.subscribe({ email: reader })).status).toBe(200);
    const subscriber = (await f.subscriber(reader))!;
    expect(subscriber.status).toBe('active');

    const strangers: net.Socket[] = [];
    try {
      for (let a = 2; a < 18; a++) for (let i = 0; i < 5; i++) strangers.push(trickler(`127.0.0.${a}`, `/f/${f.list.key}`));
      // every stranger's headers are in, and its body held, before the person comes
      await waitFor(() => strangers.every((s) => s.bytesWritten > 0), { what: 'the strangers to connect' });
      await new Promise((resolve) => setTimeout(resolve, 200));

      const signUp = await post('127.0.0.100', `/f/${f.list.key}`, `email=${encodeURIComponent(address('person'))}&name=Ann`);
      expect(signUp.status).toBe(200);
      expect(signUp.text).toContain('inbox');
      const unsubscribe = await post('127.0.0.101', `/u/${unsubscribeToken(subscriber.id)}`, 'List-Unsubscribe=One-Click');
      expect(unsubscribe.status).toBe(200);
      expect((await f.subscriber(reader))!.status).toBe('unsubscribed');

      // the trickled bodies are cut off: the strangers give their share back
      const started = Date.now();
      await waitFor(() => strangers.every((s) => s.destroyed || s.readableEnded), { timeout: PUBLIC_BODY_DEADLINE_MS + 5_000, what: 'the trickled bodies to be cut off' });
      expect(Date.now() - started).toBeLessThan(PUBLIC_BODY_DEADLINE_MS + 5_000);
    } finally {
      for (const socket of strangers) socket.destroy();
    }
  }, 30_000);
});
