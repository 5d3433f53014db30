import { config } from '../../core/src/config';
import { db } from '../../core/src/db';
import { KeyAuthenticator } from '../../core/src/auth/authenticator';
import { AuthFailures } from '../../core/src/auth/failures';
import { logger } from '../../core/src/logger';
import { collectProcessMetrics } from '../../core/src/metrics';
import { serveWorkerMetrics } from '../../core/src/metrics/worker-server';
import { tuneRuntime } from '../../core/src/runtime';
import { createSending } from '../../core/src/sending/accept';
import { onShutdown } from '../../core/src/shutdown';
import { preflight } from '../../core/src/startup';
import { Submission } from '../../core/src/submission/server';
import { submissionTls } from '../../core/src/submission/tls';

/**
 * The SMTP submission process (docs/smtp.md): its own process, so operators scale it apart from the API. It makes
 * what accepting sends keeps (the writer, queueing, mailbox cache), the key authenticator and the failure rule, as
 * the API's createApp does, and hands them to the server; the metrics are served on SMTP_METRICS_PORT.
 */
async function main(): Promise<void> {
  tuneRuntime();
  collectProcessMetrics();
  let submission: Submission | undefined;
  let auth: KeyAuthenticator | undefined;
  let metricsServer: Awaited<ReturnType<typeof serveWorkerMetrics>> | undefined;
  let sending: ReturnType<typeof createSending> | undefined;
  // SIGTERM: messages on their way finish (their 250 once written), every other command answers 421, then exit 0
  onShutdown('smtp', async () => {
    await submission?.close();
    // the accepted messages' jobs still on their way to Redis (their 250 did not wait for them)
    await sending?.deliveries.settled();
    await auth?.stop();
    metricsServer?.close();
  });

  await preflight('smtp');
  const cfg = config();
  if (cfg.smtp.port === null && cfg.smtp.portTls === null) {
    process.stderr.write('smtp: set SMTP_PORT (STARTTLS) and/or SMTPS_PORT (implicit TLS) to run SMTP submission\n');
    process.exit(1);
  }
  const tls = submissionTls(cfg.smtp, cfg.stateDir);
  auth = new KeyAuthenticator(db());
  await auth.start();
  sending = createSending(db());
  const failures = new AuthFailures(cfg.authFailuresPerMinute);
  // failed logins count with the API's failures (one allowance per client)
  await failures.start();
  const parts = { db: db(), sending, auth, failures };
  submission = new Submission(parts, { ...cfg.smtp, tls });
  const bound = await submission.listen();
  if (cfg.smtp.metricsPort !== null) metricsServer = await serveWorkerMetrics(cfg.smtp.metricsPort);
  logger.info({ ...bound, selfSigned: tls.selfSigned, insecureAuth: cfg.smtp.allowInsecureAuth, metricsPort: cfg.smtp.metricsPort }, 'smtp listening');
}

void main();
