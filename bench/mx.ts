/**
 * The bench's `mx` phase (bench/run.ts, BENCH_ONLY=mx): the MX (apps/mx) against the bare `smtp-server` package.
 * 1. Messages accepted a second: nodemailer's pool (50 connections) sending MX_MESSAGES messages of a few KB to a
 *    webhook route of an inbound domain, against the same messages to a bare smtp-server process writing them to
 *    /dev/null, in turns (five each, after two turns of warm-up); the ratio of the medians (target >= 0.8). The MX
 *    checks SPF and DMARC through a local dnsmasq and writes each message and its event to Postgres before its 250,
 *    as in production.
 * 2. Memory: 200 connections open at once, each sending messages of about 100 KB; the MX's peak RSS (target < 250 MB).
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import nodemailer from 'nodemailer';
import { Client } from 'pg';
import { DnsServer, txt } from '../test/helpers/dns-server';
import { cpuMs, cpuMsByName } from './processes';

const MX_MESSAGES = Number(process.env.BENCH_MX_MESSAGES ?? 2000);
const TURNS = 5;
const CONNECTIONS = 50;
const WIDE = 200;
const WIDE_PER_CONNECTION = 3;

export interface MxKit {
  apiPort: number;
  mxPort: number;
  baselinePort: number;
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
  throw new Error(`bench: nothing answered SMTP on ${port}`);
}

export async function mxPhase(kit: MxKit) {
  const dns = new DnsServer(['sender.bench']);
  await dns.start([txt('sender.bench', 'v=spf1 ip4:127.0.0.1 -all'), txt('_dmarc.sender.bench', 'v=DMARC1; p=reject')]);
  // the services are the bench's to stop (run.ts); the DNS server is this phase's, whatever happens
  try {
    return await measure(kit, dns);
  } finally {
    await dns.stop();
  }
}

async function measure(kit: MxKit, dns: DnsServer) {
  // the endpoint is on loopback (nothing listens: the MX only writes the events)
  const api = kit.start('apps/api/src/server.ts', { ...kit.env, WEBHOOK_ALLOW_PRIVATE: 'true' });
  await kit.up(kit.apiPort);
  const tenant = await kit.makeTenant();
  const pg = new Client({ connectionString: kit.env.DATABASE_URL });
  await pg.connect();
  const [domain] = (
    await pg.query<{ id: number }>(
      `INSERT INTO domains (account_id, name, status, inbound, inbound_mx_found_at, verified_at, updated_at) VALUES ($1, 'in.bench', 'verified', true, now(), now(), now()) RETURNING id`,
      [tenant.account],
    )
  ).rows;
  await pg.query(`INSERT INTO inbound_routes (account_id, domain_id, match, action) VALUES ($1, $2, '*', 'webhook')`, [tenant.account, domain!.id]);
  // an endpoint wants inbound.received, so every message writes its event too (as a customer's would)
  const hook = await fetch(`http://127.0.0.1:${kit.apiPort}/admin/api/webhooks`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${kit.env.ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ account: tenant.account, url: 'http://127.0.0.1:9/hooks', events: ['inbound.received'] }),
  });
  if (!hook.ok) throw new Error(`bench: the webhook endpoint was refused: ${hook.status} ${await hook.text()}`);
  await pg.end();

  const mx = kit.start('apps/mx/src/main.ts', { ...kit.env, MX_PORT: String(kit.mxPort), MX_HOST: '127.0.0.1', MX_HOSTNAME: 'mx.bench', DNS_SERVERS: dns.address });
  const baseline = kit.start('bench/mx-baseline.ts', { BASELINE_PORT: String(kit.baselinePort) });
  await listening(kit.mxPort);
  await listening(kit.baselinePort);

  const body = crypto.randomBytes(1500).toString('base64');
  const mail = (i: number, to = 'inbox@in.bench') => ({ envelope: { from: 'ann@sender.bench', to: [to] }, from: 'ann@sender.bench', to, subject: `Benchmark ${i}`, text: `Hello ${i}\n${body}` });
  const pool = (port: number, connections: number) =>
    nodemailer.createTransport({ pool: true, maxConnections: connections, maxMessages: Infinity, host: '127.0.0.1', port, secure: false, ignoreTLS: true });
  // each server's CPU a message over the timed turns: what the ratio is made of on a machine shared with other work
  const cpu = { mx: 0, bare: 0, postgres: 0, client: 0 };
  const rate = async (port: number, count: number): Promise<number> => {
    const transport = pool(port, CONNECTIONS);
    const server = port === kit.mxPort ? mx : baseline;
    const cpuBefore = cpuMs(server);
    const postgresBefore = cpuMsByName(['postgres']).postgres!;
    const clientBefore = process.cpuUsage();
    const started = performance.now();
    const results = await Promise.allSettled(Array.from({ length: count }, (_, i) => transport.sendMail(mail(i))));
    const seconds = (performance.now() - started) / 1000;
    cpu[port === kit.mxPort ? 'mx' : 'bare'] += cpuMs(server) - cpuBefore;
    if (port === kit.mxPort) {
      cpu.postgres += cpuMsByName(['postgres']).postgres! - postgresBefore;
      const client = process.cpuUsage(clientBefore);
      cpu.client += (client.user + client.system) / 1000;
    }
    transport.close();
    const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    if (refused.length) throw new Error(`bench: ${refused.length} messages refused on ${port}: ${String(refused[0]!.reason)}`);
    return count / seconds;
  };

  // two turns' worth of warm-up each: the MX runs far more code than the bare server (mailauth, pg, Postgres's plans
  // of each batch size), and is not at its steady pace after a few hundred messages (its CPU a message fell from
  // 0.77 ms in a first timed turn after 500 to 0.45 in the later ones, and still from 0.6 to 0.4 after 2,000)
  await rate(kit.mxPort, 2 * MX_MESSAGES);
  await rate(kit.baselinePort, 2 * MX_MESSAGES);
  cpu.mx = cpu.bare = cpu.postgres = cpu.client = 0;
  const mxRates: number[] = [];
  const bareRates: number[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    if (turn % 2 === 0) {
      mxRates.push(await rate(kit.mxPort, MX_MESSAGES));
      bareRates.push(await rate(kit.baselinePort, MX_MESSAGES));
    } else {
      bareRates.push(await rate(kit.baselinePort, MX_MESSAGES));
      mxRates.push(await rate(kit.mxPort, MX_MESSAGES));
    }
  }
  const acceptRss = kit.peakRssMb(mx);

  // memory: 200 connections at once, each sending messages of about 100 KB
  const big = crypto.randomBytes(75_000).toString('base64');
  const wide = pool(kit.mxPort, WIDE);
  const wideResults = await Promise.allSettled(Array.from({ length: WIDE * WIDE_PER_CONNECTION }, (_, i) => wide.sendMail({ ...mail(i), text: big })));
  wide.close();
  const rss = kit.peakRssMb(mx);
  await kit.stop(mx);
  await kit.stop(baseline);
  await kit.stop(api);

  const mxMedian = Math.round(median(mxRates));
  const bareMedian = Math.round(median(bareRates));
  return {
    messagesPerTurn: MX_MESSAGES,
    mxAcceptsPerSecond: mxMedian,
    bareSmtpServerPerSecond: bareMedian,
    ratio: +(mxMedian / bareMedian).toFixed(2),
    turns: { mx: mxRates.map(Math.round), bare: bareRates.map(Math.round) },
    // the MX's turns also cost Postgres, and the bench's client (which sends the bare side's too) shares the machine
    cpuMsPerMessage: Object.fromEntries(Object.entries(cpu).map(([name, ms]) => [name, +(ms / (TURNS * MX_MESSAGES)).toFixed(3)])),
    memory: {
      connections: WIDE,
      messages: wideResults.length,
      accepted: wideResults.filter((r) => r.status === 'fulfilled').length,
      refusals: [...new Set(wideResults.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason).slice(0, 80)))],
      mxPeakRssMbAfterAccepts: acceptRss,
      mxPeakRssMb: rss,
    },
    target: 'ratio >= 0.8; peak RSS under 250 MB',
  };
}
