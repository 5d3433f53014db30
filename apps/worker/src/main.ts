import { closeDb, db } from '../../core/src/db';
import { startInboundReader } from '../../core/src/inbound/reader';
import { closeTransports } from '../../core/src/delivery/transport';
import { logger } from '../../core/src/logger';
import { closeQueues } from '../../core/src/queues';
import { closeRedis } from '../../core/src/redis';
import { tuneRuntime } from '../../core/src/runtime';
import { preflight } from '../../core/src/startup';
import { createWorkers, scheduleMaintenance } from './workers';

async function main(): Promise<void> {
  tuneRuntime();
  await preflight('worker');
  const workers = createWorkers();
  await scheduleMaintenance();
  const inbound = startInboundReader(db());
  logger.info({ queues: workers.map((w) => w.name) }, 'worker started');

  let stopping = false;
  // SIGTERM: take no new jobs, let the in-flight ones finish, close connections, exit 0.
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'worker stopping');
    await Promise.all([...workers.map((w) => w.close()), inbound.stop()]);
    closeTransports();
    await closeQueues();
    await closeRedis();
    await closeDb();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void main();
