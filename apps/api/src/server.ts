import { config, localSecretsFile } from '../../core/src/config';
import { db } from '../../core/src/db';
import { logger } from '../../core/src/logger';
import { collectProcessMetrics } from '../../core/src/metrics';
import { tuneRuntime } from '../../core/src/runtime';
import { onShutdown } from '../../core/src/shutdown';
import { failStart, preflight } from '../../core/src/startup';
import { createApp } from './app';
import { SERVER_TIMEOUTS, configureServer } from './edge';
import { createTrackingServer } from './https';

async function main(): Promise<void> {
  tuneRuntime();
  collectProcessMetrics();
  await preflight('api');
  const cfg = config();
  const api = createApp(db());
  await api.start();
  // Express 5 hands a listen error (a port taken) to this callback instead of throwing: the process would live on
  // without a socket, so it ends as a failed start does
  const server = api.app.listen(cfg.port, (err?: Error) => {
    if (err) failStart('api', `cannot listen on port ${cfg.port}: ${err.message}`);
    logger.info({ port: cfg.port, publicUrl: cfg.publicUrl }, 'api listening');
    if (!process.env.ADMIN_TOKEN) {
      process.stdout.write(`admin token (kept in ${localSecretsFile()}): ${cfg.adminToken}\n`);
    }
  });

  configureServer(server, SERVER_TIMEOUTS, {
    perClient: cfg.httpMaxConnectionsPerClient,
    trusted: api.app.get('trust proxy fn') as (address: string, hop: number) => boolean,
  });
  // tracking domains by SNI (docs/tracking-domains.md), when HTTPS_PORT is set
  const secure = cfg.tracking.httpsPort === null ? null : createTrackingServer(api.app, db());
  if (secure) {
    const port = cfg.tracking.httpsPort;
    const refuse = (err: Error) => failStart('api', `cannot listen on HTTPS_PORT ${port}: ${err.message}`);
    secure.once('error', refuse);
    secure.listen(port, () => {
      secure.removeListener('error', refuse);
      logger.info({ port }, 'https listening for tracking domains');
    });
  }

  onShutdown('api', async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    if (secure) await new Promise<void>((resolve) => secure.close(() => resolve()));
    await api.stop();
  });
}

void main();
