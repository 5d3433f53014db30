/**
 * `npm run sink`: a mail catcher for development, without Docker. An SMTP server on 127.0.0.1:1025 (SINK_SMTP_PORT)
 * accepts every email, prints its sender, recipients and subject on the terminal with the headers a sender checks
 * (SHOWN: threading, unsubscribe, DKIM), and keeps the last SINK_KEEP (50) in memory; 127.0.0.1:1080 (SINK_HTTP_PORT)
 * shows them with every header, as Mailpit does: `/` as a page, `/messages` as JSON (newest first).
 * Point a mailbox at smtp://127.0.0.1:1025 (README.md, Try it). Nothing is kept after the process ends.
 *
 * Its own small web view rather than a console page: the catcher then works with any running service (or none), and
 * the API carries no development-only code.
 */
import http from 'node:http';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface CaughtMail {
  id: number;
  at: string;
  from: string;
  to: string[];
  subject: string;
  /** every header line in the order it came, folded lines joined */
  headers: { name: string; value: string }[];
  text: string;
}

/** The headers printed on the terminal under each email, when present. */
const SHOWN = ['Message-ID', 'In-Reply-To', 'References', 'List-Unsubscribe', 'List-Unsubscribe-Post', 'DKIM-Signature'];

const port = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    console.error(`sink: ${name} must be a port number, got ${process.env[name]}`);
    process.exit(1);
  }
  return value;
};
const smtpPort = port('SINK_SMTP_PORT', 1025);
const httpPort = port('SINK_HTTP_PORT', 1080);
const keep = Math.max(1, Number(process.env.SINK_KEEP ?? 50) || 50);

const caught: CaughtMail[] = [];
let next = 1;

const smtp = new SMTPServer({
  secure: false,
  authOptional: true,
  // any login is accepted, so a mailbox with a user and password can point here too
  allowInsecureAuth: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  size: 30 * 1024 * 1024,
  onAuth: (auth, _session, callback) => callback(null, { user: auth.username }),
  onData: (stream, session, callback) => {
    simpleParser(stream).then(
      (parsed) => {
        const mail: CaughtMail = {
          id: next++,
          at: new Date().toISOString(),
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          subject: parsed.subject ?? '',
          headers: parsed.headerLines.map((h) => {
            const unfolded = h.line.replace(/\r?\n[ \t]+/g, ' ');
            const colon = unfolded.indexOf(':');
            return { name: unfolded.slice(0, colon).trim(), value: unfolded.slice(colon + 1).trim() };
          }),
          text: (parsed.text ?? '').slice(0, 20_000),
        };
        caught.unshift(mail);
        caught.length = Math.min(caught.length, keep);
        console.log(`sink: #${mail.id} from ${mail.from} to ${mail.to.join(', ')}: ${JSON.stringify(mail.subject)}`);
        for (const name of SHOWN) {
          for (const h of mail.headers.filter((h) => h.name.toLowerCase() === name.toLowerCase())) console.log(`  ${h.name}: ${h.value}`);
        }
        callback();
      },
      (err: Error) => callback(err),
    );
  },
});
smtp.on('error', (err) => console.error(`sink: smtp: ${err.message}`));

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Every header of an email, the SHOWN ones open on the page, the rest behind "All headers". */
function headerTable(m: CaughtMail): string {
  const row = (h: { name: string; value: string }) => `<tr><th>${escape(h.name)}</th><td>${escape(h.value)}</td></tr>`;
  const shown = m.headers.filter((h) => SHOWN.some((n) => n.toLowerCase() === h.name.toLowerCase()));
  return `<table class="headers">${shown.map(row).join('')}</table><details><summary>All headers (${m.headers.length})</summary><table class="headers">${m.headers.map(row).join('')}</table></details>`;
}

function page(): string {
  const rows = caught
    .map((m) => `<article><h2>${escape(m.subject || '(no subject)')}</h2><p>#${m.id} ${escape(m.at)}<br>from ${escape(m.from)} to ${escape(m.to.join(', '))}</p>${headerTable(m)}<pre>${escape(m.text)}</pre></article>`)
    .join('\n');
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>Caught mail</title>
<style>body{font:15px system-ui,sans-serif;max-width:60em;margin:2em auto}article{border-top:1px solid #ccc}pre{white-space:pre-wrap}.headers th{text-align:left;vertical-align:top;padding-right:1em;white-space:nowrap}.headers td{font-family:monospace;word-break:break-all}</style></head>
<body><h1>Caught mail (${caught.length}, newest first; SMTP on port ${smtpPort})</h1>${rows || '<p>Nothing yet.</p>'}</body></html>`;
}

const web = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method === 'GET' && path === '/messages') {
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ok: true, messages: caught }, null, 2) + '\n');
  } else if (req.method === 'GET' && path === '/') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'" }).end(page());
  } else {
    res.writeHead(404, { 'Content-Type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'GET / or /messages' }) + '\n');
  }
});

const cannotListen = (what: string) => (err: Error) => {
  console.error(`sink: cannot listen for ${what}: ${err.message}`);
  process.exit(1);
};
web.once('error', cannotListen(`HTTP on ${httpPort}`));
smtp.server.once('error', cannotListen(`SMTP on ${smtpPort}`));
smtp.listen(smtpPort, '127.0.0.1', () => {
  web.listen(httpPort, '127.0.0.1', () => {
    console.log(`sink: SMTP on 127.0.0.1:${smtpPort}, caught mail at http://127.0.0.1:${httpPort}/ (JSON: /messages)`);
  });
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    web.close();
    smtp.close(() => process.exit(0));
  });
}
