import { config, ConfigError } from './config';
import { logger } from './logger';
import { migrate } from './migrate';
import { createRedis } from './redis';

/** postgresql://user:secret@host/db -> postgresql://user:***@host/db, for messages. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** Ends a process that cannot start: one line on stderr, exit code 1. */
export function failStart(processName: string, line: string): never {
  process.stderr.write(`${processName}: ${line}\n`);
  process.exit(1);
}

export async function checkRedis(timeoutMs = 5000): Promise<void> {
  const client = createRedis({ lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
  } finally {
    client.disconnect();
  }
}

/**
 * What both processes do before serving: validate the configuration, create and migrate the database, reach Redis.
 * Any failure ends the process with one clear line instead of a stack trace.
 */
export async function preflight(processName: string): Promise<void> {
  let cfg;
  try {
    cfg = config();
  } catch (err) {
    if (err instanceof ConfigError) failStart(processName, `configuration error: ${err.message}`);
    throw err;
  }
  // production refuses a weak admin token (config.ts); elsewhere it is said once at start
  if (cfg.adminTokenWeakness) logger.warn({ process: processName }, `${cfg.adminTokenWeakness}: fine for development and tests, refused when NODE_ENV=production`);
  try {
    await migrate(cfg.directDatabaseUrl);
  } catch (err) {
    failStart(processName, `cannot prepare the database at ${redactUrl(cfg.directDatabaseUrl)}: ${(err as Error).message || String(err)}`);
  }
  try {
    await checkRedis();
  } catch (err) {
    failStart(processName, `cannot reach Redis at ${redactUrl(cfg.redisUrl)}: ${(err as Error).message || String(err)}`);
  }
}
