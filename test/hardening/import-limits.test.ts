import http from 'node:http';
import net from 'node:net';
import express from 'express';
import { errorHandler } from '../../apps/api/src/middleware/errors';
import { PayloadTooLarge } from '../../apps/core/src/errors';
import { db } from '../../apps/core/src/db';
import { ADMIN_TOKEN, useListeningApi } from '../helpers/api';
import { makeList, makeTenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';

// a 1 MB limit (set before the app reads its configuration), so a body over it costs the test little
const LIMIT = 1024 * 1024;
process.env.IMPORT_MAX_BYTES = String(LIMIT);

const ctx = useListeningApi();

async function listId(): Promise<number> {
  const tenant = await makeTenant();
  return (await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false })).id;
}

const LINE = Buffer.from('someone.with.a.longer.address@example.com,Some Person\n');

interface Upload {
  status: number;
  type: string;
  body: unknown;
  /** body bytes the client had written when the answer came */
  sentWhenAnswered: number;
  error?: string;
}

/**
 * Uploads CSV lines to the list's import, `total` bytes after the header; `declared` sends a Content-Length of that,
 * else the body is chunked. Stops writing once an answer came (as curl does) and reads it whole.
 */
function upload(list: number, total: number, options: { declared?: number; stopAfter?: number } = {}): Promise<Upload> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(ctx.port, '127.0.0.1');
    const received: Buffer[] = [];
    let sent = 0;
    let sentWhenAnswered = -1;
    let error: string | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer after ${sent} bytes sent`));
    }, 20_000);
    const settle = () => {
      clearTimeout(timer);
      const text = Buffer.concat(received).toString();
      const at = text.indexOf('\r\n\r\n');
      const head = text.slice(0, at);
      let body: unknown = text.slice(at + 4);
      try {
        body = JSON.parse(body as string);
      } catch {
        // left as text: the expectation shows it
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), type: /^content-type: (.*)$/im.exec(head)?.[1] ?? '', body, sentWhenAnswered, error });
      socket.destroy();
    };
    socket.on('data', (chunk) => {
      if (sentWhenAnswered < 0) sentWhenAnswered = sent;
      received.push(chunk);
      // the whole answer is in (its Content-Length): the client is done
      const text = Buffer.concat(received).toString();
      const at = text.indexOf('\r\n\r\n');
      const length = Number(/^content-length: (\d+)/im.exec(text.slice(0, at))?.[1] ?? NaN);
      if (at >= 0 && Buffer.byteLength(text) - at - 4 >= length) settle();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code));
    socket.on('close', settle);
    const framing = options.declared !== undefined ? `Content-Length: ${options.declared}` : 'Transfer-Encoding: chunked';
    socket.write(`POST /admin/api/lists/${list}/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nContent-Type: text/csv\r\n${framing}\r\n\r\n`);
    const piece = Buffer.concat([Buffer.from('email,name\n'), ...Array<Buffer>(1200).fill(LINE)]);
    const chunked = options.declared === undefined;
    const pump = () => {
      while (sentWhenAnswered < 0 && sent < Math.min(total, options.stopAfter ?? total)) {
        sent += piece.length;
        const more = chunked ? socket.write(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')])) : socket.write(piece);
        if (!more) return void socket.once('drain', pump);
      }
      // the body's end, without closing the client's side (Node's server would take a half-close as the end of the
      // connection and abort the request)
      if (sent >= total && chunked && sentWhenAnswered < 0) socket.write('0\r\n\r\n');
    };
    pump();
  });
}

const importsOf = (list: number) => db().import.count({ where: { listId: list } });

describe('an import over IMPORT_MAX_BYTES', () => {
  it('declared too large: 413 in JSON as soon as the headers arrive, before a byte of the body is read', async () => {
    const list = await listId();
    // 133 MB declared, one piece (64 KB) sent, then the client waits: only an answer given from the headers comes
    const answer = await upload(list, 133 * 1024 * 1024, { declared: 133 * 1024 * 1024, stopAfter: 1 });
    expect(answer).toMatchObject({ status: 413, type: expect.stringMatching(/^application\/json/), body: { ok: false, error: `an import is at most ${LIMIT} bytes (IMPORT_MAX_BYTES)` } });
    expect(await importsOf(list)).toBe(0);
  });

  it('chunked too large: read up to the limit, then 413 in JSON; the client reads it, and nothing is stored', async () => {
    const list = await listId();
    const total = 24 * 1024 * 1024;
    const answer = await upload(list, total);
    expect(answer).toMatchObject({ status: 413, type: expect.stringMatching(/^application\/json/), body: { ok: false, error: `an import is at most ${LIMIT} bytes (IMPORT_MAX_BYTES)` } });
    expect(answer.error).toBeUndefined();
    // the server stopped reading at the limit and answered: the client had far from all of its body out
    expect(answer.sentWhenAnswered).toBeGreaterThan(0);
    expect(answer.sentWhenAnswered).toBeLessThan(total / 2);
    expect(await importsOf(list)).toBe(0);
    expect(await db().importLine.count()).toBe(0);
  });

  it('within the limit, chunked: 202 as before', async () => {
    const list = await listId();
    const answer = await upload(list, 256 * 1024);
    expect(answer).toMatchObject({ status: 202, body: { ok: true, import: { status: 'queued' } } });
  });
});

describe('the error handler', () => {
  it("answers in JSON, and throws nothing, for a request whose socket is gone (req.socket is null)", async () => {
    // a route that loses its request's socket the way an import did (an async iterator left early destroys the
    // request, and req.socket becomes null while the connection stays), then refuses it
    const outcomes: unknown[] = [];
    const app = express();
    app.post('/gone', async (req) => {
      for await (const _ of req) throw new PayloadTooLarge('over the limit');
    });
    app.use((err: unknown, req: express.Request, res: express.Response, next: express.NextFunction) => {
      try {
        errorHandler(err, req, res, next);
        outcomes.push({ socket: req.socket, answered: res.headersSent });
      } catch (thrown) {
        outcomes.push(thrown);
      }
    });
    const local = http.createServer(app);
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((local.address() as net.AddressInfo).port, '127.0.0.1');
    try {
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString()));
      socket.on('error', () => undefined);
      socket.write(`POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n${'x'.repeat(1000)}`);
      await waitFor(() => outcomes.length, { what: 'the error handler' });
      expect(outcomes).toEqual([{ socket: null, answered: true }]);
      await waitFor(() => answer.includes('"ok":false'), { what: 'the answer' });
      expect(answer).toMatch(/^HTTP\/1\.1 413 /);
      expect(answer).toContain('{"ok":false,"error":"over the limit"}');
    } finally {
      socket.destroy();
      local.closeAllConnections();
      await new Promise((resolve) => local.close(resolve));
    }
  });
});
