/**
 * The fault suite's SMTP submission scenarios (faults/run.ts): the compiled SMTP process (dist/apps/smtp) beside the
 * API and a worker, driven by real clients (nodemailer's pool, and raw sockets for a DATA cut in the middle).
 * - `smtp-postgres-down`: Postgres stopped for 10 s while clients submit; they get 451 (or 454 at AUTH), retry the same
 *   message (same Message-ID) until a 250, and each message is delivered exactly once.
 * - `smtp-kill`: the SMTP process SIGKILLed while 20 clients are in the middle of DATA; nothing of those messages is
 *   written or sent; a new process takes their retries, each sent once.
 */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { Client } from 'pg';
import { submissionTls } from '../apps/core/src/submission/tls';

interface Service {
  child: ChildProcess;
  output: () => string;
}

interface SmtpWorld {
  name: string;
  env: Record<string, string>;
  token: string;
  sink: { smtpPort: number; httpPort: number };
  pg: { stop(): void; start(): void };
}

export interface SmtpKit {
  tmp: string;
  freePort: () => Promise<number>;
  until: <T>(check: () => Promise<T | false | null | undefined>, timeoutMs: number, what: string, interval?: number) => Promise<T>;
  sleep: (ms: number) => Promise<unknown>;
  log: (...parts: unknown[]) => void;
  drained: (sink: SmtpWorld['sink'], ids: string[], timeoutMs: number) => Promise<number | null>;
  delivery: (sink: SmtpWorld['sink'], ids: string[]) => Promise<{ accepted: number; delivered: number; duplicates: number; lost: number }>;
  startNode: (entry: string, env: Record<string, string>, logName?: string) => Service;
  stopService: (service: Service, signal?: NodeJS.Signals) => Promise<void>;
}

const MAILBOX = 'faults@example.com';
/** the sink keys copies by the Message-ID's part before `@` (faults/run.ts sinkIds) */
const messageId = (scenario: string, i: number) => `<${scenario}-${i}@client.example>`;
const idKey = (scenario: string, i: number) => `${scenario}-${i}`;

export function smtpScenarios(kit: SmtpKit) {
  const { log, sleep, until } = kit;
  let smtp: Service | undefined;

  /** The SMTP process for `world` on a free port (STARTTLS offered, AUTH in the clear allowed on loopback). */
  async function startSmtp(world: SmtpWorld): Promise<number> {
    const port = await kit.freePort();
    // a certificate of its own (production makes none): the development pair, made as a development start makes it
    submissionTls({ tlsCert: null, tlsKey: null, name: 'localhost' }, path.join(kit.tmp, `smtp-${world.name}`));
    const dir = path.join(kit.tmp, `smtp-${world.name}`, 'smtp-tls');
    smtp = kit.startNode(
      'apps/smtp/src/main.ts',
      {
        ...world.env,
        SMTP_PORT: String(port),
        SMTP_HOST: '127.0.0.1',
        SMTP_TLS_CERT: path.join(dir, 'cert.pem'),
        SMTP_TLS_KEY: path.join(dir, 'key.pem'),
        SMTP_ALLOW_INSECURE_AUTH: 'true',
        SMTP_MAX_CONNECTIONS_PER_ADDRESS: '500',
      },
      `${world.name}-smtp`,
    );
    const started = smtp;
    await until(
      () =>
        new Promise<boolean>((resolve, reject) => {
          if (started.child.exitCode !== null) return reject(new Error(`the SMTP process exited: ${started.output()}`));
          const socket = net.connect(port, '127.0.0.1');
          socket.once('data', (d) => {
            socket.destroy();
            resolve(d.toString().startsWith('220'));
          });
          socket.once('error', () => resolve(false));
        }),
      60_000,
      'the SMTP process',
    );
    return port;
  }

  async function rowsOf(world: SmtpWorld, like: string): Promise<{ sends: number; messages: number }> {
    const client = new Client({ connectionString: world.env.DATABASE_URL });
    await client.connect();
    try {
      const sends = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM sends WHERE raw IS NOT NULL AND position($1 in convert_from(raw, 'UTF8')) > 0", [like]);
      const messages = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM messages m JOIN sends s ON s.id = m.send_id WHERE position($1 in convert_from(s.raw, 'UTF8')) > 0",
        [like],
      );
      return { sends: sends.rows[0]!.n, messages: messages.rows[0]!.n };
    } finally {
      await client.end();
    }
  }

  const teardown = async () => {
    if (smtp) await kit.stopService(smtp);
    smtp = undefined;
  };

  return {
    'smtp-postgres-down': {
      apis: 1,
      workers: 1,
      setup: async () => undefined,
      teardown,
      async run(world: SmtpWorld) {
        const name = 'smtp-postgres-down';
        const port = await startSmtp(world);
        const count = 300;
        const transport = nodemailer.createTransport({ pool: true, maxConnections: 5, maxMessages: Infinity, host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'faults', pass: world.token } });
        const codes: Record<string, number> = {};
        const acceptedIds: string[] = [];
        let next = 0;
        let stopped = false;
        const submitOne = async (i: number) => {
          const deadline = Date.now() + 180_000;
          for (;;) {
            try {
              await transport.sendMail({ from: MAILBOX, to: `reader${i}@example.org`, subject: `SMTP fault ${i}`, text: 'Hello over SMTP.', messageId: messageId(name, i) });
              codes['250'] = (codes['250'] ?? 0) + 1;
              acceptedIds.push(idKey(name, i));
              return;
            } catch (err) {
              const code = String((err as { responseCode?: number }).responseCode ?? (err as { code?: string }).code ?? 'error');
              codes[code] = (codes[code] ?? 0) + 1;
              if (Date.now() > deadline) return;
              await sleep(500);
            }
          }
        };
        const clients = Array.from({ length: 5 }, async () => {
          while (next < count) await submitOne(next++);
        });
        await until(async () => acceptedIds.length >= 60, 60_000, 'the first accepts');
        world.pg.stop();
        stopped = true;
        const stoppedAt = Date.now();
        log('postgres stopped at', acceptedIds.length, 'accepted over SMTP');
        await sleep(10_000);
        world.pg.start();
        log('postgres back after', Math.round((Date.now() - stoppedAt) / 1000), 's');
        await Promise.all(clients);
        transport.close();
        const all = Array.from({ length: count }, (_, i) => idKey(name, i));
        const ms = await kit.drained(world.sink, all, 180_000);
        await sleep(5_000);
        const d = await kit.delivery(world.sink, all);
        const refusedFor5xx = Object.entries(codes).filter(([c]) => c.startsWith('5')).reduce((n, [, v]) => n + v, 0);
        return {
          accepted: acceptedIds.length,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: ms === null ? null : Math.round(ms / 100) / 10,
          duringFault: { answers: codes, postgresStopped: stopped },
          target: 'every message accepted after retries and delivered once; 451 (or 454 at AUTH) during the outage, never a 5xx',
          met: acceptedIds.length === count && d.lost === 0 && d.duplicates === 0 && (codes['451'] ?? 0) > 0 && refusedFor5xx === 0,
        };
      },
    },

    'smtp-kill': {
      apis: 1,
      workers: 1,
      setup: async () => undefined,
      teardown,
      async run(world: SmtpWorld) {
        const name = 'smtp-kill';
        let port = await startSmtp(world);
        // 100 whole messages first (accepted before the kill: each sent once)
        const before = nodemailer.createTransport({ pool: true, maxConnections: 5, host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'faults', pass: world.token } });
        await Promise.all(
          Array.from({ length: 100 }, (_, i) => before.sendMail({ from: MAILBOX, to: `reader${i}@example.org`, subject: `whole ${i}`, text: 'whole', messageId: messageId(name, i) })),
        );
        before.close();
        // 20 clients in the middle of DATA: headers and half of a 200 KB body written, the rest held back
        const cut = Array.from({ length: 20 }, (_, j) => 100 + j);
        const sockets = await Promise.all(cut.map((i) => halfData(port, world.token, i, name)));
        const heldBack = await Promise.all(sockets.map((s) => s.waitingForRest));
        log('killing the SMTP process with', heldBack.length, 'clients in the middle of DATA');
        smtp!.child.kill('SIGKILL');
        await sleep(1_000);
        const cutAnswers = sockets.map((s) => s.answers());
        sockets.forEach((s) => s.socket.destroy());
        await sleep(5_000);
        // nothing half-accepted: none of the cut messages has a row, a queued copy or a delivery
        const cutKeys = cut.map((i) => idKey(name, i));
        const deliveredEarly = (await kit.delivery(world.sink, cutKeys)).delivered;
        const cutRows = await Promise.all(cut.map((i) => rowsOf(world, messageId(name, i))));
        const halfAccepted = cutRows.reduce((n, r) => n + r.sends + r.messages, 0);
        // the clients retry on a new process: each cut message is sent once
        port = await startSmtp(world);
        const after = nodemailer.createTransport({ pool: true, maxConnections: 5, host: '127.0.0.1', port, secure: false, ignoreTLS: true, auth: { user: 'faults', pass: world.token } });
        await Promise.all(cut.map((i) => after.sendMail({ from: MAILBOX, to: `reader${i}@example.org`, subject: `retried ${i}`, text: 'retried', messageId: messageId(name, i) })));
        after.close();
        const all = Array.from({ length: 120 }, (_, i) => idKey(name, i));
        const ms = await kit.drained(world.sink, all, 120_000);
        await sleep(3_000);
        const d = await kit.delivery(world.sink, all);
        return {
          accepted: 120,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: ms === null ? null : Math.round(ms / 100) / 10,
          duringFault: { clientsMidData: heldBack.length, answersSeenByThemBeforeTheCut: cutAnswers.flat().filter((a) => a.startsWith('250 2.0.0')).length, halfAcceptedRows: halfAccepted, cutDeliveredBeforeRetry: deliveredEarly },
          target: 'nothing of a message cut mid-DATA written or sent; its retry sent once; the 100 before the kill sent once',
          met: halfAccepted === 0 && deliveredEarly === 0 && d.lost === 0 && d.duplicates === 0,
        };
      },
    },
  };
}

/** A raw client that authenticates, starts a message and writes half of it: resolves once the half is written. */
async function halfData(port: number, token: string, i: number, scenario: string) {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  const expectCode = async (code: string) => {
    const deadline = Date.now() + 15_000;
    while (!text.split('\r\n').some((l) => l.startsWith(`${code} `))) {
      if (Date.now() > deadline) throw new Error(`no ${code} from the SMTP process: ${text.slice(-300)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    text = '';
  };
  await expectCode('220');
  socket.write('EHLO faults.example\r\n');
  await expectCode('250');
  socket.write(`AUTH PLAIN ${Buffer.from(`\0faults\0${token}`).toString('base64')}\r\n`);
  await expectCode('235');
  socket.write(`MAIL FROM:<${MAILBOX}>\r\n`);
  await expectCode('250');
  socket.write(`RCPT TO:<reader${i}@example.org>\r\n`);
  await expectCode('250');
  socket.write('DATA\r\n');
  await expectCode('354');
  const line = `${'z'.repeat(76)}\r\n`;
  socket.write(`From: ${MAILBOX}\r\nTo: reader${i}@example.org\r\nSubject: cut ${i}\r\nMessage-ID: ${messageId(scenario, i)}\r\n\r\n${line.repeat(1300)}`);
  const waitingForRest = new Promise<true>((resolve) => socket.write('', () => resolve(true)));
  return { socket, waitingForRest, answers: () => text.split('\r\n').filter(Boolean) };
}
