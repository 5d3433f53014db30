import { Redis } from 'ioredis';
import { refusalOf } from '../../apps/api/src/middleware/errors';
import type { Db } from '../../apps/core/src/db';
import { startHousekeeping } from '../../apps/core/src/housekeeping';
import { logger } from '../../apps/core/src/logger';
import { dependencies } from '../../apps/core/src/outage';
import { watched } from '../../apps/core/src/redis';
import { startDispatcher } from '../../apps/core/src/webhooks/dispatch';
import { waitFor } from '../helpers/wait';

/** A dependency going away is one warn line, its return one info line with how long it was away; no stacks. */
it('a Redis that is not there: one warn line however many reconnection attempts fail, and one info line when it is back', async () => {
  const warn = jest.spyOn(logger, 'warn');
  const info = jest.spyOn(logger, 'info');
  const client = watched(new Redis('redis://127.0.0.1:1', { retryStrategy: () => 20, maxRetriesPerRequest: 0, lazyConnect: true }));
  let errors = 0;
  client.on('error', () => errors++);
  try {
    client.connect().catch(() => undefined);
    await waitFor(() => (errors >= 5 ? true : undefined), { what: 'five failed connection attempts' });
    const lines = warn.mock.calls.filter((call) => (call[0] as { dependency?: string }).dependency === 'redis');
    expect(lines).toHaveLength(1);
    expect(lines[0]![1]).toBe('redis is unreachable; waiting for it');
    dependencies.up('redis');
    const back = info.mock.calls.filter((call) => (call[0] as { dependency?: string }).dependency === 'redis');
    expect(back).toHaveLength(1);
    expect((back[0]![0] as { awayMs: number }).awayMs).toBeGreaterThanOrEqual(0);
  } finally {
    client.disconnect();
    warn.mockRestore();
    info.mockRestore();
  }
});

it('an expected 503 (Postgres away) logs no error and no stack: the outage is one warn line', () => {
  const error = jest.spyOn(logger, 'error');
  const warn = jest.spyOn(logger, 'warn');
  try {
    const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    for (let i = 0; i < 5; i++) expect(refusalOf(unreachable, 'r1', { method: 'POST', path: '/api/v1/send' }).status).toBe(503);
    expect(error).not.toHaveBeenCalled();
    expect(warn.mock.calls.filter((call) => (call[0] as { dependency?: string }).dependency === 'postgres')).toHaveLength(1);
    dependencies.up('postgres');
  } finally {
    error.mockRestore();
    warn.mockRestore();
  }
});

it("the worker's loops (housekeeping, the event dispatcher) log an outage once, not a line a tick", async () => {
  const warn = jest.spyOn(logger, 'warn');
  const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  // a database client whose every statement fails as when Postgres is stopped
  const away = {
    $transaction: async () => {
      throw unreachable;
    },
    $queryRawUnsafe: async () => {
      throw unreachable;
    },
  } as unknown as Db;
  const housekeeping = startHousekeeping(away, [{ name: 'probe', everyMs: 20, run: async () => undefined }]);
  const dispatcher = startDispatcher(away, { everyMs: 20 });
  try {
    await new Promise((resolve) => setTimeout(resolve, 400));
    // (the first test's client may report one more failed attempt after its disconnect: Redis is not this test's)
    const lines = warn.mock.calls.filter((call) => (call[0] as { dependency?: string }).dependency !== 'redis').map((call) => call[1]);
    expect(lines.filter((l) => l === 'postgres is unreachable; waiting for it')).toHaveLength(1);
    expect(lines.filter((l) => l !== 'postgres is unreachable; waiting for it')).toEqual([]);
  } finally {
    await housekeeping.stop();
    await dispatcher.stop();
    dependencies.up('postgres');
    warn.mockRestore();
  }
});
