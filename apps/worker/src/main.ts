import { closeDb, db } from '../../core/src/db';
import { productionGuards } from '../../core/src/delivery/production-guards';
import { closeTransports } from '../../core/src/delivery/transport';
import { logger } from '../../core/src/logger';
import { closeQueues } from '../../core/src/queues';
import { closeRedis } from '../../core/src/redis';
import { tuneRuntime } from '../../core/src/runtime';
import { preflight } from '../../core/src/startup';
import { createWorkers, startMaintenance } from './workers';

async function main(): Promise<void> {
  tuneRuntime();
  await preflight('worker');
  // the pre-send guards, built once here and passed down (a test runs this file as a process: test/sending/wiring.test.ts)
  const workers = createWorkers({ guards: productionGuards() });
  const housekeeping = startMaintenance(db());

  let stopping = false;
  // SIGTERM: take no new jobs, let the in-flight ones finish, close connections, exit 0.
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    await Promise.all([...workers.map((w) => w.close()), housekeeping.stop()]);
    closeTransports();
    await closeQueues();
    await closeRedis();
    await closeDb();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  logger.info({ queues: workers.map((w) => w.name) }, 'worker started');
}

void main();
