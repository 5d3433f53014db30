/**
 * The fault suite's OAuth2 scenario: a mailbox that signs in with XOAUTH2 whose provider's token endpoint answers 500
 * for a minute under sends. The outage is the mailbox's, not each email's: token requests back off, no attempt is
 * spent, one warn line and one info line, nothing lost. Used by faults/run.ts.
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import type { Kit, WorldLike } from './kit';

interface Service {
  child: ChildProcess;
  output: () => string;
}

export interface OAuthWorld extends WorldLike {
  mailbox: number;
  admin<T>(p: string, body: unknown, method?: string): Promise<T>;
}

export interface OAuthKit<W extends OAuthWorld, A, D> extends Kit<W, A, D> {
  startNode: (entry: string, env: Record<string, string>, logName?: string) => Service;
  stopService: (service: Service, signal?: NodeJS.Signals) => Promise<void>;
}

/** How long the token endpoint answers 500. */
const DOWN_MS = 60_000;
const REFRESH_TOKEN = 'faults-refresh-token';
const MAILBOX = 'faults@example.com';

/**
 * A provider's token endpoint on loopback (RFC 6749 section 5, refresh grant only): 500 while `down`, else a new access
 * token for an hour. `GET /check?token=` answers 200 for a token it issued (the sink asks it at each login).
 */
async function tokenEndpoint() {
  const state = { down: false, issued: new Set<string>(), refused: 0, granted: 0, refusedAt: [] as number[] };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/check') {
      return void res.writeHead(state.issued.has(url.searchParams.get('token') ?? '') ? 200 : 401).end();
    }
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      res.setHeader('Content-Type', 'application/json');
      if (state.down) {
        state.refused++;
        state.refusedAt.push(Date.now());
        return void res.writeHead(500).end(JSON.stringify({ error: 'server_error' }));
      }
      if (form.get('grant_type') !== 'refresh_token' || form.get('refresh_token') !== REFRESH_TOKEN) {
        return void res.writeHead(400).end(JSON.stringify({ error: 'invalid_grant' }));
      }
      const token = `at-${crypto.randomBytes(12).toString('hex')}`;
      state.issued.add(token);
      state.granted++;
      res.writeHead(200).end(JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return Object.assign(state, { url, close: () => new Promise((resolve) => server.close(resolve)) });
}

/** The lines about the mailbox's provider in each worker log (the scenario's workers log at info), by level. */
function providerLines(logsDir: string, world: OAuthWorld): Record<string, { warn: number; info: number }> {
  const dependency = `oauth provider of mailbox ${world.mailbox}`;
  const out: Record<string, { warn: number; info: number }> = {};
  for (const { child } of world.workers) {
    const file = path.join(logsDir, `${world.name}-worker-${child.pid}.log`);
    const lines = { warn: 0, info: 0 };
    for (const line of fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n') : []) {
      if (!line.includes(`"${dependency}"`)) continue;
      let level = 0;
      try {
        level = (JSON.parse(line) as { level: number }).level;
      } catch {
        // not pino's
      }
      if (level === 40) lines.warn++;
      else if (level === 30) lines.info++;
    }
    out[`worker ${child.pid}`] = lines;
  }
  return out;
}

/** Every row's attempts as Postgres counts them, and the failed attempts it recorded. */
async function attemptsOf(url: string): Promise<{ byAttempts: Record<string, number>; failedAttempts: number }> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ attempts: number; n: number }>('SELECT attempts, count(*)::int AS n FROM messages GROUP BY attempts');
    const failed = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM message_attempts');
    return { byAttempts: Object.fromEntries(rows.map((r) => [r.attempts, r.n])), failedAttempts: failed.rows[0]!.n };
  } finally {
    await client.end();
  }
}

export function oauthScenarios<W extends OAuthWorld, A, D>(kit: OAuthKit<W, A, D>) {
  let provider: Awaited<ReturnType<typeof tokenEndpoint>> | undefined;
  let sink: Service | undefined;

  return {
    /**
     * 2,000 sends from an OAuth2 mailbox (XOAUTH2 against a sink that checks every token with the provider), two
     * workers; the provider's token endpoint answers 500 from the workers' start for 60 s, 100 more sends meanwhile.
     */
    'oauth-provider-down': {
      apis: 1,
      workers: 2,
      drainFirst: true,
      async setup(world: W) {
        provider = await tokenEndpoint();
        const ports = { smtpPort: await kit.freePort(), httpPort: await kit.freePort() };
        sink = kit.startNode('bench/smtp-sink.ts', { SINK_SMTP_PORT: String(ports.smtpPort), SINK_HTTP_PORT: String(ports.httpPort), SINK_XOAUTH2_CHECK_URL: `${provider.url}/check` }, 'oauth-sink');
        await kit.until(async () => (await fetch(`http://127.0.0.1:${ports.httpPort}/count`)).ok, 30_000, 'the XOAUTH2 sink');
        world.sink = ports;
      },
      async teardown() {
        if (sink) await kit.stopService(sink);
        await provider?.close();
        sink = undefined;
        provider = undefined;
      },
      async run(world: W) {
        const endpoint = provider!;
        await world.admin(
          `/mailboxes/${world.mailbox}`,
          {
            smtp: `smtp://${encodeURIComponent(MAILBOX)}@127.0.0.1:${world.sink.smtpPort}?tls=off`,
            auth: { type: 'oauth2', provider: 'custom', client_id: 'faults-client', client_secret: 'faults-secret', refresh_token: REFRESH_TOKEN, token_url: `${endpoint.url}/token` },
          },
          'PATCH',
        );
        const answers = await kit.load(world, kit.sends);
        endpoint.down = true;
        // the workers' lines about the provider are at info and warn: counted below
        world.env.LOG_LEVEL = 'info';
        for (let i = 0; i < world.workerCount; i++) world.startWorker();
        const downAt = Date.now();
        kit.log('oauth provider down; workers started');
        const during = await kit.load(world, 100, kit.sends, 5);
        await kit.sleep(Math.max(0, downAt + DOWN_MS - Date.now()));
        const deliveredWhileDown = await kit.deliveredCount(world.sink);
        endpoint.down = false;
        const upAt = Date.now();
        kit.log(`oauth provider back after ${Math.round((upAt - downAt) / 1000)} s: ${endpoint.refused} token requests refused`);
        const ids = [...kit.accepted(answers), ...kit.accepted(during)];
        const ms = await kit.drained(world.sink, ids, 240_000);
        await kit.sleep(3_000);
        const d = await kit.delivery(world.sink, ids);
        const attempts = await attemptsOf(world.env.DATABASE_URL!);
        const lines = providerLines(kit.logsDir, world);
        const allLines = Object.values(lines);
        const logged = allLines.every((l) => l.warn <= 1 && l.info === l.warn) && allLines.some((l) => l.warn === 1);
        const requestsBackedOff = endpoint.refused <= 10;
        return {
          accepted: d.accepted,
          delivered: d.delivered,
          duplicates: d.duplicates,
          lost: d.lost,
          drainSeconds: ms === null ? null : Math.round((Date.now() - 3_000 - upAt) / 100) / 10,
          duringFault: {
            sendsDuringTheOutage: kit.summarizeAnswers(during),
            deliveredWhileDown,
            tokenRequestsRefused: endpoint.refused,
            refusedAtSecondsFromDown: endpoint.refusedAt.map((t) => Math.round((t - downAt) / 100) / 10),
            tokensGranted: endpoint.granted,
            rowsByAttempts: attempts.byAttempts,
            failedAttemptsRecorded: attempts.failedAttempts,
            providerLines: lines,
          },
          target: '0 lost, 0 duplicates; nothing delivered and no attempt spent while the provider is down (every row 1 attempt); at most 10 token requests in the 60 s; per worker at most one warn line and as many info lines',
          met:
            d.lost === 0 &&
            d.duplicates === 0 &&
            d.accepted === kit.sends + 100 &&
            deliveredWhileDown === 0 &&
            Object.keys(attempts.byAttempts).join() === '1' &&
            attempts.failedAttempts === 0 &&
            requestsBackedOff &&
            logged,
        };
      },
    },
  };
}
