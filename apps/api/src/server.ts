import { config, localSecretsFile } from '../../core/src/config';
import { closeDb, db } from '../../core/src/db';
import { logger } from '../../core/src/logger';
import { collectProcessMetrics } from '../../core/src/metrics';
import { closeQueues } from '../../core/src/queues';
import { closeRedis } from '../../core/src/redis';
import { tuneRuntime } from '../../core/src/runtime';
import { preflight } from '../../core/src/startup';
import { createApp } from './app';
import { configureServer } from './edge';

async function main(): Promise<void> {
  tuneRuntime();
  collectProcessMetrics();
  await preflight('api');
  const cfg = config();
  const api = createApp(db());
  await api.start();
  const server = api.app.listen(cfg.port, () => {
    logger.info({ port: cfg.port, publicUrl: cfg.publicUrl }, 'api listening');
    if (!process.env.ADMIN_TOKEN) {
      process.stdout.write(`admin token (kept in ${localSecretsFile()}): ${cfg.adminToken}\n`);
    }
  });

  configureServer(server);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'api stopping');
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await api.stop();
    await closeQueues();
    await closeRedis();
    await closeDb();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

void main();
