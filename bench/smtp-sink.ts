/**
 * A counting SMTP sink for the benchmarks and the fault suite, run as its own process so it does not share a core
 * with what is measured. It accepts every message and records, per Message-ID, when each copy's DATA ended (epoch ms).
 * SMTP on SINK_SMTP_PORT; HTTP on SINK_HTTP_PORT: GET /count answers `{count, unique, signed}` (copies, distinct
 * Message-IDs, copies with a DKIM-Signature header), GET /ids `{ "<id@domain>": [t1, t2...] }`, POST /reset forgets
 * everything. SINK_DELAY_MS (default 0) makes it answer each DATA that much later, like a remote server (the bench's
 * scale phase). SINK_XOAUTH2_CHECK_URL makes it a server that takes XOAUTH2 logins only (as Gmail does): each access
 * token is checked with a GET of that URL plus `?token=...` (200: issued by the provider), and mail without a login is
 * refused (the fault suite's `oauth-provider-down`).
 */
import http from 'node:http';
import { SMTPServer } from 'smtp-server';

const DELAY_MS = Number(process.env.SINK_DELAY_MS ?? 0);
let received = new Map<string, number[]>();
let count = 0;
let signed = 0;

const XOAUTH2_CHECK_URL = process.env.SINK_XOAUTH2_CHECK_URL;

/** The provider says whether it issued the token (any failure to ask is a refusal). */
async function tokenIssued(token: string): Promise<boolean> {
  const res = await fetch(`${XOAUTH2_CHECK_URL}?token=${encodeURIComponent(token)}`).catch(() => null);
  return res?.status === 200;
}

const smtp = new SMTPServer({
  ...(XOAUTH2_CHECK_URL
    ? {
        disabledCommands: ['STARTTLS'],
        authMethods: ['XOAUTH2'],
        allowInsecureAuth: true,
        onAuth(login, _session, callback) {
          if (login.method !== 'XOAUTH2' || !login.accessToken) return callback(new Error('XOAUTH2 only'));
          void tokenIssued(login.accessToken).then((issued) =>
            issued ? callback(null, { user: login.username }) : callback(null, { data: { status: '401', schemes: 'bearer' } }),
          );
        },
      }
    : { disabledCommands: ['STARTTLS', 'AUTH'], authOptional: true }),
  logger: false,
  onData(stream, _session, callback) {
    let head = '';
    stream.on('data', (chunk: Buffer) => {
      if (head.length < 8192) head += chunk.toString('latin1');
    });
    stream.on('end', () => {
      const id = /^Message-ID:\s*(<[^>\r\n]+>)/im.exec(head)?.[1] ?? `<none-${count}>`;
      const at = Date.now();
      const list = received.get(id);
      if (list) list.push(at);
      else received.set(id, [at]);
      count++;
      if (/^DKIM-Signature:/im.test(head)) signed++;
      if (DELAY_MS > 0) setTimeout(callback, DELAY_MS);
      else callback();
    });
  },
});
smtp.on('error', () => undefined);
smtp.listen(Number(process.env.SINK_SMTP_PORT), '127.0.0.1');

http
  .createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json');
    if (req.method === 'POST' && req.url === '/reset') {
      received = new Map();
      count = 0;
      signed = 0;
      return res.end('{"ok":true}');
    }
    if (req.url === '/ids') return res.end(JSON.stringify(Object.fromEntries(received)));
    res.end(JSON.stringify({ count, unique: received.size, signed }));
  })
  .listen(Number(process.env.SINK_HTTP_PORT), '127.0.0.1', () => console.log('sink ready'));
