import http from 'node:http';
import net from 'node:net';
import type { Express } from 'express';
import { LINGER_MAX_BYTES } from '../../apps/api/src/middleware/unread-body';
import { openApiDocument } from '../../apps/api/src/openapi/document';
import { useListeningApi } from '../helpers/api';

/**
 * A body over the 1 MB limit sent without credentials, to every path and method of the public API's OpenAPI document
 * and of the admin API: whatever the route, the client reads its JSON answer, never a reset (EPIPE or ECONNRESET on its
 * write). The server settles a body left unread (middleware/unread-body.ts), not each route.
 */
const ctx = useListeningApi();

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: unknown;
}

/** Every route of the app's route table under `prefix`, as [METHOD, path] with `:params` made 1. */
function routesUnder(app: Express, prefix: string): [string, string][] {
  const found: [string, string][] = [];
  const walk = (stack: Layer[], base: string) => {
    for (const layer of stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      if (layer.route) {
        const path = (base + layer.route.path).replace(/:\w+/g, '1');
        for (const method of Object.keys(layer.route.methods).filter((m) => m !== '_all')) found.push([method.toUpperCase(), path]);
      } else if (layer.handle.stack) walk(layer.handle.stack, base + mount);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return found.filter(([, path]) => path.startsWith(prefix));
}

function publicRoutes(): [string, string][] {
  const paths = openApiDocument().paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, methods]) => Object.keys(methods).map((m): [string, string] => [m.toUpperCase(), `/api/v1${path.replace(/\{\w+\}/g, '1')}`]));
}

interface Exchange {
  head: string;
  body: string;
  /** the client's write failed: the connection was reset under it */
  error?: string;
}

/**
 * Sends the headers and a body of `size` bytes (declared, or chunked), ends its side, and reads what comes back.
 * `writesAfterEnd`: the client goes on writing after the server's FIN (one that ignores the end of the connection).
 */
function exchange(method: string, path: string, size: number, chunked: boolean, writesAfterEnd = false): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect({ port: ctx.port, host: '127.0.0.1', allowHalfOpen: writesAfterEnd });
    const received: Buffer[] = [];
    let error: string | undefined;
    socket.on('data', (chunk) => received.push(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
    socket.on('close', () => {
      const text = Buffer.concat(received).toString();
      const at = text.indexOf('\r\n\r\n');
      resolve({ head: at < 0 ? text : text.slice(0, at), body: at < 0 ? '' : text.slice(at + 4), error });
    });
    const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${size}`;
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
    const piece = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        const part = piece.subarray(0, Math.min(piece.length, size - sent));
        sent += part.length;
        const more = chunked ? socket.write(Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')])) : socket.write(part);
        if (!more) return void socket.once('drain', pump);
      }
      if (chunked) socket.end('0\r\n\r\n');
      else socket.end();
    };
    pump();
  });
}

/** The JSON answer read off an exchange: its status and `ok`; the failure to read it otherwise. */
function answerOf(x: Exchange): { status: number; ok: unknown } | string {
  if (x.error) return `reset: ${x.error} (after ${x.head.split('\r\n')[0] || 'no answer'})`;
  const status = /^HTTP\/1\.1 (\d{3})/.exec(x.head)?.[1];
  if (!status) return `no answer: ${x.head.slice(0, 80)}`;
  if (!/^content-type: application\/json/im.test(x.head)) return `not JSON: ${x.head}`;
  const length = Number(/^content-length: (\d+)/im.exec(x.head)?.[1]);
  try {
    return { status: Number(status), ok: (JSON.parse(x.body.slice(0, length)) as { ok?: unknown }).ok };
  } catch {
    return `not a whole JSON body: ${x.body.slice(0, 80)}`;
  }
}

describe('a body over 1 MB without credentials gets its JSON answer on every route, never a reset', () => {
  it('knows the routes: every operation of the OpenAPI document and the admin API', () => {
    const admin = routesUnder(ctx.api.app, '/admin/api/');
    expect(publicRoutes().length).toBeGreaterThanOrEqual(8);
    expect(admin.length).toBeGreaterThanOrEqual(30);
    expect(admin).toContainEqual(['POST', '/admin/api/lists/1/import']);
    expect(publicRoutes()).toContainEqual(['POST', '/api/v1/prospects/state']);
  });

  // 2 MB of a declared length is read on a connection kept open; chunked, or larger than the drain's 16 MB, the server
  // answers with Connection: close, half-closes and reads the rest before it closes
  const cases: [string, number, boolean][] = [
    ['2 MB declared', 2 * 1024 * 1024, false],
    ['2 MB chunked', 2 * 1024 * 1024, true],
    ['20 MB declared', 20 * 1024 * 1024, false],
  ];
  it.each(cases)('%s', async (_name, size, chunked) => {
    const routes = [...publicRoutes(), ...routesUnder(ctx.api.app, '/admin/api/')];
    const failures: string[] = [];
    for (const [method, path] of routes) {
      const answer = answerOf(await exchange(method, path, size, chunked, true));
      if (typeof answer === 'string' || answer.ok !== false || ![401, 429].includes(answer.status)) failures.push(`${method} ${path}: ${JSON.stringify(answer)}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it('past the bound, the server closes: a body that never ends is not read for ever', async () => {
    const size = LINGER_MAX_BYTES + 32 * 1024 * 1024;
    const connections: net.Socket[] = [];
    const seen = (socket: net.Socket) => connections.push(socket);
    ctx.server.on('connection', seen);
    try {
      const x = await exchange('POST', '/api/v1/send', size, true, true);
      // the answer came first, whole; then the server read at most the bound more, and closed
      expect(x.head).toMatch(/^HTTP\/1\.1 (401|429) /);
      expect(connections).toHaveLength(1);
      expect(connections[0]!.destroyed).toBe(true);
      expect(connections[0]!.bytesRead).toBeLessThan(LINGER_MAX_BYTES + 4 * 1024 * 1024);
    } finally {
      ctx.server.off('connection', seen);
    }
  }, 60_000);
});
