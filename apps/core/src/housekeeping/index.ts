import type { Db } from '../db';
import { logger } from '../logger';
import { noteOutage } from '../outage';
import { tryTaskLock } from './repository';

export interface HousekeepingTask {
  name: string;
  everyMs: number;
  run: () => Promise<unknown>;
}

export interface Housekeeping {
  /** Stops the timers and waits for a run in progress. */
  stop(): Promise<void>;
}

/**
 * Periodic housekeeping that lives in each worker process, not in Redis: a schedule kept in Redis (BullMQ's
 * repeatable jobs) vanishes with Redis's data, and with it the reconciler that would re-queue what Redis lost. Every
 * worker runs a timer per task; a Postgres advisory lock (held by the transaction around the run) lets one worker at a
 * time do each task, the others skip that tick. A run that fails (Postgres or Redis away) is tried again at the next.
 */
export function startHousekeeping(db: Db, tasks: HousekeepingTask[]): Housekeeping {
  let stopped = false;
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Set<Promise<void>>();

  const tick = async (task: HousekeepingTask) => {
    try {
      await db.$transaction(
        async (tx) => {
          if (await tryTaskLock(tx, task.name)) await task.run();
        },
        { maxWait: 10_000, timeout: 10 * 60_000 },
      );
    } catch (err) {
      if (!noteOutage(err)) logger.warn({ task: task.name, err: (err as Error).message }, 'housekeeping task failed; trying again at the next tick');
    }
  };

  const schedule = (task: HousekeepingTask) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      const run = tick(task).finally(() => {
        running.delete(run);
        schedule(task);
      });
      running.add(run);
    }, task.everyMs);
    timers.set(task.name, timer);
  };
  for (const task of tasks) schedule(task);

  return {
    async stop() {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      await Promise.all([...running]);
    },
  };
}
