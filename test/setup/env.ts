import crypto from 'node:crypto';
import { baselineWasmOnly } from '../../apps/core/src/short-lived';
import { databaseUrl, runId } from './shared';

/** Before each test file loads: its own database and Redis prefix, fixed secrets, quiet logs. */
const file = crypto.randomBytes(4).toString('hex');
process.env.NODE_ENV = 'test';
process.env.MS_TEST_DATABASE = `ms_test_${runId()}_${file}`;
process.env.DATABASE_URL = databaseUrl(process.env.MS_TEST_DATABASE);
process.env.REDIS_PREFIX = `mstest:${runId()}:${file}`;
process.env.ADMIN_TOKEN = 'test-admin-token-0123456789';
process.env.SECRET_KEY = crypto.randomBytes(32).toString('hex');
process.env.PUBLIC_URL = 'http://mail.test';
process.env.WEBHOOK_RETRY_BASE_MS = '200';
process.env.LOG_LEVEL = process.env.LOG_LEVEL ?? 'silent';
process.env.INBOX_POLL_SECONDS = '1';
// every test's webhook receiver listens on loopback; test/webhooks/guard.test.ts turns this off to see the refusals
process.env.WEBHOOK_ALLOW_PRIVATE = process.env.WEBHOOK_ALLOW_PRIVATE ?? 'true';
// each test file makes its own Prisma client: its query compiler stays at the baseline tier (core/short-lived.ts),
// a tenth of the test processes' CPU
baselineWasmOnly();
