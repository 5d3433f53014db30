/** What the services of a fault run wrote to their logs: a quiet log through expected faults, few stack frames. */
import fs from 'node:fs';
import path from 'node:path';
import type { Result } from './kit';
import { logFiles } from './services';

/** The stack frames every service of this run wrote to its log (a frame: a line "at ..." alone or inside a JSON stack). */
export function stackFrames(): { frames: number; byFile: Record<string, number> } {
  const byFile: Record<string, number> = {};
  let frames = 0;
  for (const file of logFiles) {
    if (!fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, 'utf8').replace(/\\n/g, '\n');
    const n = (text.match(/^\s+at \S.*$/gm) ?? []).length;
    if (n) byFile[path.basename(file)] = n;
    frames += n;
  }
  return { frames, byFile };
}

/**
 * The dependency outages each scenario makes its services see (Postgres or Redis going and coming back); the others
 * make none. `quiet-logs` allows each service log of a scenario two lines at warn or above per outage.
 */
const OUTAGES: Record<string, number> = {
  'redis-lost': 1,
  'postgres-stopped': 1,
  'redis-down-accept': 1,
  'webhook-retries-redis-lost': 1,
  'scheduled-broadcast-redis-lost': 1,
  'postgres-longer-than-lease': 1,
  'idempotency-through-faults': 1,
  'sentinel-failover': 1,
  'smtp-postgres-down': 1,
  'series-redis-lost': 1,
  'inbound-events-restart': 1,
  'pgbouncer-outage': 1,
  'redis-hung': 1,
  'redis-dead-writes': 1,
  'oauth-provider-down': 1,
  'pg-failover': 1,
};

/**
 * Every API and worker log of the scenarios run (at LOG_LEVEL=warn, so each line is warn or above, or a line that is
 * not pino's): no error line, since every fault here is an expected one, and at most two lines per dependency outage.
 */
export function quietLogs(ran: string[]): Omit<Result, 'scenario'> {
  let errorLines = 0;
  const overBudget: Record<string, { lines: number; allowed: number; messages: Record<string, number> }> = {};
  const errors: Record<string, number> = {};
  for (const file of logFiles) {
    const base = path.basename(file);
    const scenario = ran.find((name) => base.startsWith(`${name}-api-`) || base.startsWith(`${name}-worker-`) || base.startsWith(`${name}-smtp-`));
    if (!scenario || !fs.existsSync(file)) continue;
    const messages: Record<string, number> = {};
    let lines = 0;
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let entry: { level?: number; msg?: string; err?: unknown } = {};
      try {
        entry = JSON.parse(line);
      } catch {
        entry = { level: 40, msg: line.slice(0, 80) };
      }
      if ((entry.level ?? 0) < 40) continue;
      lines++;
      const what = `${entry.msg}${typeof entry.err === 'string' ? `: ${entry.err.slice(0, 60)}` : ''}`;
      messages[what] = (messages[what] ?? 0) + 1;
      if ((entry.level ?? 0) >= 50) {
        errorLines++;
        errors[`${base}: ${what}`] = (errors[`${base}: ${what}`] ?? 0) + 1;
      }
    }
    const allowed = 2 * (OUTAGES[scenario] ?? 0);
    if (lines > allowed) overBudget[base] = { lines, allowed, messages };
  }
  return {
    accepted: 0, delivered: 0, duplicates: 0, lost: 0, drainSeconds: null,
    duringFault: { errorLines, errors, logsOverTheirBudget: overBudget },
    target: 'over every scenario\'s API and worker logs: no error line for an expected outage, at most two lines (warn or above) per dependency outage',
    met: errorLines === 0 && Object.keys(overBudget).length === 0,
  };
}
