import { config } from '../../core/src/config';
import { db } from '../../core/src/db';
import { logger } from '../../core/src/logger';
import { collectProcessMetrics } from '../../core/src/metrics';
import { serveWorkerMetrics } from '../../core/src/metrics/worker-server';
import { mxResolver } from '../../core/src/mx/auth';
import { Mx } from '../../core/src/mx/server';
import { tuneRuntime } from '../../core/src/runtime';
import { onShutdown } from '../../core/src/shutdown';
import { preflight } from '../../core/src/startup';
import { submissionTls } from '../../core/src/submission/tls';

/**
 * The MX (docs/mx.md): mail for inbound domains and the VERP return paths, taken in the session and written to
 * Postgres before the 250. Its own process, on MX_PORT (25 in production); metrics on MX_METRICS_PORT.
 */
async function main(): Promise<void> {
  tuneRuntime();
  collectProcessMetrics();
  let mx: Mx | undefined;
  let metricsServer: Awaited<ReturnType<typeof serveWorkerMetrics>> | undefined;
  // SIGTERM: messages on their way finish (their 250 once written), then exit 0
  onShutdown('mx', async () => {
    await mx?.close();
    metricsServer?.close();
  });

  await preflight('mx');
  const cfg = config();
  if (cfg.mx.port === null) {
    process.stderr.write('mx: set MX_PORT (25 in production) to run the MX\n');
    process.exit(1);
  }
  // STARTTLS with the submission certificate (SMTP_TLS_CERT / SMTP_TLS_KEY, or the development pair)
  const tls = submissionTls(cfg.smtp, cfg.stateDir);
  mx = new Mx({ db: db(), resolver: mxResolver() }, { ...cfg.mx, port: cfg.mx.port, returnPathHost: cfg.returnPathHost, tls });
  const port = await mx.listen();
  if (cfg.mx.metricsPort !== null) metricsServer = await serveWorkerMetrics(cfg.mx.metricsPort);
  logger.info({ port, hostname: cfg.mx.hostname, rspamd: Boolean(cfg.mx.rspamdUrl), metricsPort: cfg.mx.metricsPort }, 'mx listening');
}

void main();
