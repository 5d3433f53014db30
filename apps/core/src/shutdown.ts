import { closeDb } from './db';
import { logger } from './logger';
import { closeQueues } from './queues';
import { closeRedis } from './redis';

/**
 * A process's graceful stop (the API, the worker, SMTP submission; startup.ts is its start): on the first SIGTERM or
 * SIGINT, once whichever comes and however many follow, it logs `<name> stopping`, runs `stopOwn` (what the process
 * itself runs, in its own order), then closes the connections every process shares (the BullMQ queues, Redis,
 * Postgres) and exits 0. Registered when called: a process that may be signalled while it starts calls it first.
 */
export function onShutdown(name: string, stopOwn: () => Promise<void>): void {
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, `${name} stopping`);
    await stopOwn();
    await closeQueues();
    await closeRedis();
    await closeDb();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
