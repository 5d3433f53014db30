import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { useListeningApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

// two 1 MB bodies at once, no more (set before the app reads its configuration)
process.env.MAX_BODY_BYTES_IN_FLIGHT = String(2 * 1024 * 1024);

/** The API reads at most MAX_BODY_BYTES_IN_FLIGHT of request bodies at once: slow clients cannot hold more. */
const ctx = useListeningApi();

/** A client that announces a 1 MB body and sends only its first bytes; `answer` is what came back, if anything. */
function slowClient(token: string) {
  const socket = net.connect(ctx.port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(`POST /api/v1/send HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n{"to":"a@example.org",`);
  return { socket, answer: () => answer };
}

const settle = () => new Promise((r) => setTimeout(r, 300));

it('answers 503 with Retry-After, in JSON, to a body that does not fit, and takes bodies again once one is done', async () => {
  const tenant = await makeTenant();
  const first = slowClient(tenant.token);
  const second = slowClient(tenant.token);
  await settle();
  const third = slowClient(tenant.token);
  await settle();
  expect(first.answer()).toBe('');
  expect(second.answer()).toBe('');
  expect(third.answer()).toMatch(/^HTTP\/1\.1 503/);
  expect(third.answer()).toMatch(/Retry-After: 1/i);
  expect(third.answer()).toMatch(/"ok":false,"error":"the service is reading too many request bodies at once/);
  // a client that leaves gives its bytes back
  first.socket.destroy();
  await settle();
  const fourth = slowClient(tenant.token);
  await settle();
  expect(fourth.answer()).toBe('');
  // the budget is full again, but a request without a body is never held back
  const lists = await fetch(`http://127.0.0.1:${ctx.port}/api/v1/lists`, { headers: { Authorization: `Bearer ${tenant.token}` } });
  expect(lists.status).toBe(200);
  for (const c of [second, third, fourth]) c.socket.destroy();
});
