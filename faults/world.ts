/** One scenario's world: a database, a Redis, APIs, workers, a tenant, the sink. */
import { until, type Result } from './kit';
import { freePort } from '../test/helpers/processes';
import type { OwnPostgres, OwnRedis } from './own-servers';
import { startNode, stopService, type Service } from './services';

// NODE_ENV=production takes an admin token of at least 32 characters; faults/webhooks.ts uses the same
const ADMIN_TOKEN = 'faults-admin-token-0123456789-abcdefghijklmnop';
const SECRET_KEY = 'cd'.repeat(32);

export interface Sink {
  smtpPort: number;
  httpPort: number;
}

export class World {
  apis: { service: Service; port: number }[] = [];
  workers: Service[] = [];
  /** how many workers the scenario runs */
  workerCount = 1;
  token = '';
  readonly env: Record<string, string>;

  constructor(
    readonly name: string,
    readonly pg: OwnPostgres,
    readonly redis: OwnRedis,
    /** a scenario may give its world a sink of its own (a slow one) in its setup */
    public sink: Sink,
  ) {
    this.env = {
      DATABASE_URL: pg.url(`faults_${name.replace(/\W/g, '_')}`),
      REDIS_URL: redis.url,
      REDIS_PREFIX: `faults:${name}`,
      ADMIN_TOKEN,
      SECRET_KEY,
      PUBLIC_URL: 'http://127.0.0.1',
      // the webhook scenario's receiver is on loopback, and its retries come within seconds (1 s x 4^n)
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_RETRY_BASE_MS: '1000',
    };
  }

  async startApi(): Promise<void> {
    const port = await freePort();
    const service = startNode('apps/api/src/server.ts', { ...this.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` }, `${this.name}-api`);
    await until(async () => {
      if (service.child.exitCode !== null) throw new Error(`the API exited: ${service.output()}`);
      return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
    }, 60_000, 'the API');
    this.apis.push({ service, port });
  }

  startWorker(): Service {
    const worker = startNode('apps/worker/src/main.ts', this.env, `${this.name}-worker`);
    this.workers.push(worker);
    return worker;
  }

  account = 0;
  mailbox = 0;

  /** A call of the admin API on the first API: 201 (200 for PATCH) or it throws. */
  async admin<T>(p: string, body: unknown, method = 'POST'): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.apis[0]!.port}/admin/api${p}`, {
      method,
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== (method === 'POST' ? 201 : 200)) throw new Error(`admin ${method} ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  async tenant(): Promise<void> {
    const admin = <T>(p: string, body: unknown) => this.admin<T>(p, body);
    const { account } = await admin<{ account: { id: number } }>('/accounts', { name: 'faults' });
    const { mailbox } = await admin<{ mailbox: { id: number } }>('/mailboxes', {
      account: account.id,
      address: 'faults@example.com',
      smtp: `smtp://127.0.0.1:${this.sink.smtpPort}`,
      daily_limit: 100_000,
      gap_seconds: 0,
    });
    const { key } = await admin<{ key: { token: string } }>('/keys', { account: account.id, name: 'faults', mailbox: mailbox.id, daily_limit: 10_000_000 });
    this.token = key.token;
    this.account = account.id;
    this.mailbox = mailbox.id;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.workers, ...this.apis.map((a) => a.service)].map((s) => stopService(s)));
  }
}

/** A scenario run on a fresh world; `drainFirst`: it accepts its sends before starting the workers. */
export interface Scenario {
  apis: number;
  workers: number;
  drainFirst?: boolean;
  setup?: (world: World) => Promise<void>;
  teardown?: () => Promise<void>;
  run: (world: World) => Promise<Omit<Result, 'scenario'>>;
}
