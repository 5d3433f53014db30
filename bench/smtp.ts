/**
 * The bench's `smtp` phase (bench/run.ts, BENCH_ONLY=smtp): SMTP submission against POST /api/v1/send.
 * 1. Accepts per second: nodemailer's pool (50 connections) submitting SMTP_MESSAGES emails to the SMTP process, and
 *    the same emails posted by 50 concurrent clients to POST /api/v1/send, in turns (three each); the ratio of the
 *    medians (target >= 0.8). No worker runs: both sides only accept (the rows wait in the queue alike).
 *    Besides, the CPU an accept (the serving process, Postgres and Redis, and the clients in this process: nodemailer's
 *    pool or fetch), median of the turns: a loaded host changes it least.
 * 2. Memory: 200 idle authenticated connections, then 50 clients each submitting BIG_PER_CLIENT messages of about
 *    1 MB; the SMTP process's peak RSS (target < 250 MB).
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { submissionTls } from '../apps/core/src/submission/tls';
import { cpuMs, cpuMsByName } from './processes';

const SMTP_MESSAGES = Number(process.env.BENCH_SMTP_MESSAGES ?? 3000);
const TURNS = 3;
const CONNECTIONS = 50;
const IDLE = 200;
const BIG_CLIENTS = 50;
const BIG_PER_CLIENT = 4;

export interface SmtpKit {
  apiPort: number;
  smtpPort: number;
  env: Record<string, string>;
  start: (entry: string, env: Record<string, string>) => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
  up: (port: number, path?: string) => Promise<void>;
  makeTenant: () => Promise<{ token: string; account: number; mailbox: number }>;
  peakRssMb: (child: ChildProcess) => number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function listening(port: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('data', (d) => {
        socket.destroy();
        resolve(d.toString().startsWith('220'));
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('bench: the SMTP process did not start');
}

/** An authenticated connection that then says nothing (a pooled client between messages). */
async function idleConnection(port: number, token: string): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  const expectCode = async (code: string) => {
    const deadline = Date.now() + 30_000;
    while (!text.split('\r\n').some((l) => l.startsWith(`${code} `))) {
      if (Date.now() > deadline) throw new Error(`bench: no ${code} from the SMTP process: ${text.slice(-200)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    text = '';
  };
  await expectCode('220');
  socket.write('EHLO idle.example\r\n');
  await expectCode('250');
  socket.write(`AUTH PLAIN ${Buffer.from(`\0idle\0${token}`).toString('base64')}\r\n`);
  await expectCode('235');
  return socket;
}

export async function smtpPhase(kit: SmtpKit) {
  const certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-smtp-'));
  submissionTls({ tlsCert: null, tlsKey: null, name: 'localhost' }, certDir);
  const smtpEnv = {
    ...kit.env,
    SMTP_PORT: String(kit.smtpPort),
    SMTP_HOST: '127.0.0.1',
    SMTP_TLS_CERT: path.join(certDir, 'smtp-tls', 'cert.pem'),
    SMTP_TLS_KEY: path.join(certDir, 'smtp-tls', 'key.pem'),
    // the bench's clients speak in the clear on loopback, as the API's do; many connections from one address
    SMTP_ALLOW_INSECURE_AUTH: 'true',
    SMTP_MAX_CONNECTIONS_PER_ADDRESS: '1000',
    SMTP_MAX_CONNECTIONS: '2000',
  };
  const api = kit.start('apps/api/src/server.ts', kit.env);
  await kit.up(kit.apiPort);
  const smtp = kit.start('apps/smtp/src/main.ts', smtpEnv);
  await listening(kit.smtpPort);
  const tenant = await kit.makeTenant();
  const mail = (i: number) => ({ from: 'bench@example.com', to: 'reader@example.com', subject: 'Benchmark', text: `Hello ${i}` });
  const pool = nodemailer.createTransport({
    pool: true, maxConnections: CONNECTIONS, maxMessages: Infinity, host: '127.0.0.1', port: kit.smtpPort, secure: false, ignoreTLS: true,
    auth: { user: 'bench', pass: tenant.token },
  });

  const viaSmtp = async (count: number): Promise<number> => {
    const started = performance.now();
    const results = await Promise.allSettled(Array.from({ length: count }, (_, i) => pool.sendMail(mail(i))));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    if (ok !== count) throw new Error(`bench: ${count - ok} SMTP submissions refused: ${String((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)}`);
    return count / ((performance.now() - started) / 1000);
  };
  const viaApi = async (count: number): Promise<number> => {
    const started = performance.now();
    let next = 0;
    let refused = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < count) {
          const i = next++;
          const res = await fetch(`http://127.0.0.1:${kit.apiPort}/api/v1/send`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json' },
            body: JSON.stringify(mail(i)),
          });
          await res.arrayBuffer();
          if (res.status !== 202) refused++;
        }
      }),
    );
    if (refused) throw new Error(`bench: ${refused} API sends refused`);
    return count / ((performance.now() - started) / 1000);
  };

  // warm-up of both paths (JIT, connections, prepared statements), outside the measurement
  await viaSmtp(1000);
  await viaApi(1000);
  const smtpRates: number[] = [];
  const apiRates: number[] = [];
  // CPU an accept of the process serving it, of Postgres and Redis (every such process on the host) and of the clients
  // (this process): what a loaded host changes least (ms)
  const cpu = { smtp: [] as number[], api: [] as number[], smtpStores: [] as number[], apiStores: [] as number[], smtpClient: [] as number[], apiClient: [] as number[] };
  const stores = () => Object.values(cpuMsByName(['postgres', 'redis-server'])).reduce((a, b) => a + b, 0);
  const measured = async (side: 'smtp' | 'api') => {
    const server = side === 'smtp' ? smtp : api;
    const [own, theirs, client] = [cpuMs(server), stores(), process.cpuUsage()];
    (side === 'smtp' ? smtpRates : apiRates).push(await (side === 'smtp' ? viaSmtp : viaApi)(SMTP_MESSAGES));
    const used = process.cpuUsage(client);
    cpu[side === 'smtp' ? 'smtpClient' : 'apiClient'].push((used.user + used.system) / 1000 / SMTP_MESSAGES);
    cpu[side].push((cpuMs(server) - own) / SMTP_MESSAGES);
    cpu[side === 'smtp' ? 'smtpStores' : 'apiStores'].push((stores() - theirs) / SMTP_MESSAGES);
  };
  for (let turn = 0; turn < TURNS; turn++) {
    for (const side of turn % 2 === 0 ? (['smtp', 'api'] as const) : (['api', 'smtp'] as const)) await measured(side);
  }
  pool.close();
  const acceptRss = kit.peakRssMb(smtp);

  // memory: 200 idle connections, then 50 clients sending 1 MB messages
  const idle = await Promise.all(Array.from({ length: IDLE }, () => idleConnection(kit.smtpPort, tenant.token)));
  const attachment = crypto.randomBytes(720_000);
  const big = nodemailer.createTransport({
    pool: true, maxConnections: BIG_CLIENTS, maxMessages: Infinity, host: '127.0.0.1', port: kit.smtpPort, secure: false, ignoreTLS: true,
    auth: { user: 'bench', pass: tenant.token },
  });
  const bigStarted = performance.now();
  const bigResults = await Promise.allSettled(
    Array.from({ length: BIG_CLIENTS * BIG_PER_CLIENT }, (_, i) =>
      big.sendMail({ ...mail(i), subject: 'A big one', attachments: [{ filename: 'big.bin', content: attachment }] }),
    ),
  );
  const bigSeconds = (performance.now() - bigStarted) / 1000;
  big.close();
  const rss = kit.peakRssMb(smtp);
  idle.forEach((s) => s.destroy());
  await kit.stop(smtp);
  await kit.stop(api);
  fs.rmSync(certDir, { recursive: true, force: true });

  const smtpMedian = Math.round(median(smtpRates));
  const apiMedian = Math.round(median(apiRates));
  return {
    messagesPerTurn: SMTP_MESSAGES,
    smtpAcceptsPerSecond: smtpMedian,
    apiAcceptsPerSecond: apiMedian,
    ratio: +(smtpMedian / apiMedian).toFixed(2),
    turns: { smtp: smtpRates.map(Math.round), api: apiRates.map(Math.round) },
    cpuMsPerAccept: {
      smtp: +median(cpu.smtp).toFixed(3),
      api: +median(cpu.api).toFixed(3),
      postgresAndRedis: { smtp: +median(cpu.smtpStores).toFixed(3), api: +median(cpu.apiStores).toFixed(3) },
      client: { smtp: +median(cpu.smtpClient).toFixed(3), api: +median(cpu.apiClient).toFixed(3) },
    },
    memory: {
      idleConnections: IDLE,
      bigClients: BIG_CLIENTS,
      bigMessages: bigResults.length,
      bigAccepted: bigResults.filter((r) => r.status === 'fulfilled').length,
      bigRefusals: [...new Set(bigResults.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason).slice(0, 80)))],
      bigSeconds: +bigSeconds.toFixed(1),
      smtpPeakRssMbAfterAccepts: acceptRss,
      smtpPeakRssMb: rss,
    },
    target: 'ratio >= 0.8; peak RSS under 250 MB',
  };
}
