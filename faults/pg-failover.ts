/**
 * The fault suite's `pg-failover` (docs/reliability.md, docs/deploy.md "Postgres with a standby"): Postgres as a
 * pg_auto_failover formation of the scenario's own (Debian's postgresql-15-auto-failover: a monitor, a primary and a
 * secondary, test/helpers/pg-auto-failover.ts), the service's DATABASE_URL listing both nodes. 900 sends accepted, two
 * workers draining them, the primary's whole process group SIGKILLed mid-drain and 100 more sends made while the
 * monitor promotes the secondary. Used by faults/run.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AutoFailover } from '../test/helpers/pg-auto-failover';
import { pick, seconds, type Kit, type TopologyScenario, type WorldLike } from './kit';

export interface FailoverWorld extends WorldLike {
  token: string;
}

/** The formation's ports: the monitor's and the two nodes' (41410 to 41412 unless FAULTS_PGAF_PORT moves the first). */
const BASE_PORT = Number(process.env.FAULTS_PGAF_PORT ?? 41410);
const PORTS = { monitor: BASE_PORT, nodes: [BASE_PORT + 1, BASE_PORT + 2] as [number, number] };
const BEFORE = 900;
const DURING = 100;
/** A second copy counts as the SMTP window's (docs/reliability.md, "At-least-once at the edge") when its first copy came this close to the kill. */
const SMTP_WINDOW_MS = 1_000;

/** Every formation the run made, for its check that nothing it started outlives it. */
const formations: AutoFailover[] = [];

/** The formations' process groups still alive (none after the scenario's teardown). */
export function formationsLeftRunning(): number[] {
  return formations.flatMap((f) => f.leftRunning());
}

/** One keyed send, repeated after no answer or a 503 (as its Retry-After says) until a 202 or the deadline. */
async function sendUntilAccepted(world: FailoverWorld, i: number, deadlineMs: number): Promise<{ ids: string[]; at: number; statuses: number[] }> {
  const until = Date.now() + deadlineMs;
  const statuses: number[] = [];
  for (;;) {
    let status = 0;
    let retryAfter: string | null = null;
    try {
      const res = await fetch(`http://127.0.0.1:${world.apis[0]!.port}/api/v1/send`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${world.token}`, 'Content-Type': 'application/json', 'Idempotency-Key': `pg-failover-${i}` },
        body: JSON.stringify({ to: `reader${i}@example.org`, subject: `Failover ${i}`, text: 'Hello through a failover.' }),
        signal: AbortSignal.timeout(30_000),
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      const body = (await res.json().catch(() => ({}))) as { messages?: { id: string }[] };
      if (status === 202 || status === 200) return { ids: (body.messages ?? []).map((m) => m.id), at: Date.now(), statuses: [...statuses, status] };
    } catch {
      status = 0;
    }
    statuses.push(status);
    if (![0, 503].includes(status) || Date.now() > until) return { ids: [], at: Date.now(), statuses };
    await new Promise((resolve) => setTimeout(resolve, retryAfter ? Math.min(2_000, Number(retryAfter) * 1000) : 250));
  }
}

/** Each service log of the world: its warn-or-above lines, and its "postgres is back" lines with the primary they name. */
function failoverLines(kit: { logsDir: string }, world: WorldLike) {
  const files = [
    ...world.apis.map((a) => `${world.name}-api-${a.service.child.pid}.log`),
    ...world.workers.map((w) => `${world.name}-worker-${w.child.pid}.log`),
  ];
  return files.map((file) => {
    const warn: string[] = [];
    const back: string[] = [];
    const full = path.join(kit.logsDir, file);
    for (const line of fs.existsSync(full) ? fs.readFileSync(full, 'utf8').split('\n') : []) {
      if (!line.trim()) continue;
      let entry: { level?: number; msg?: string; primary?: string } = {};
      try {
        entry = JSON.parse(line);
      } catch {
        entry = { level: 40, msg: line.slice(0, 80) };
      }
      if ((entry.level ?? 0) >= 40) warn.push(entry.msg ?? '');
      else if (entry.level === 30 && entry.msg === 'postgres is back') back.push(entry.primary ?? '(same primary)');
    }
    return { file, warn, back };
  });
}

export function failoverScenarios<W extends FailoverWorld, A, D extends { received: Map<string, number[]>; duplicateIds: string[] }>(
  kit: Kit<W, A, D>,
): Record<string, TopologyScenario<W>> {
  let formation: AutoFailover | undefined;

  return {
    'pg-failover': {
      apis: 1,
      workers: 2,
      drainFirst: true,
      async setup(world) {
        if (!fs.existsSync('/usr/bin/pg_autoctl')) throw new Error('install postgresql-15-auto-failover first (apt-get install -y postgresql-15-auto-failover)');
        formation = new AutoFailover(PORTS, `faults_${world.name.replace(/\W/g, '_')}`);
        formations.push(formation);
        const started = Date.now();
        await formation.create();
        kit.log(`pg_auto_failover: monitor :${PORTS.monitor}, primary :${PORTS.nodes[0]}, secondary :${PORTS.nodes[1]} (${seconds(Date.now() - started)} s to make)`);
        // the failover's own lines are at info: the processes log at info here (the quiet-logs budget counts warn and above)
        Object.assign(world.env, { DATABASE_URL: formation.url, LOG_LEVEL: 'info' });
      },
      async teardown() {
        formation?.keepLogs(kit.logsDir, `pg-failover-pgautoctl-${PORTS.monitor}`);
        await formation?.destroy();
        formation = undefined;
      },
      async run(world) {
        const f = formation!;
        const answers = await kit.load(world, BEFORE);
        const ids = kit.accepted(answers);
        for (let i = 0; i < world.workerCount; i++) world.startWorker();
        // the workers' start takes a minute on a loaded host
        await kit.until(async () => (await kit.deliveredCount(world.sink)) >= 250, 180_000, 'the first deliveries', 20);
        const atKill = await kit.deliveredCount(world.sink);
        // the formation as it was: node1 the primary still (no failover of the monitor's own on a loaded host)
        const beforeKill = await f.states();
        await f.kill(1);
        const killedAt = Date.now();
        kit.log('primary (node1) SIGKILLed at', atKill, 'delivered');
        // sends while the secondary is promoted: 5 clients, each repeating its keyed send until it is accepted
        let next = 0;
        const during: Awaited<ReturnType<typeof sendUntilAccepted>>[] = [];
        const duringDone = Promise.all(
          Array.from({ length: 5 }, async () => {
            while (next < DURING) during.push(await sendUntilAccepted(world, 100_000 + next++, 120_000));
          }),
        );
        await kit.until(() => f.acceptsWrites(2), 90_000, 'the promotion of node2', 100);
        const promotedAt = Date.now();
        kit.log('node2 promoted', promotedAt - killedAt, 'ms after the kill', JSON.stringify(await f.states()));
        await duringDone;
        const all = [...ids, ...during.flatMap((d) => d.ids)];
        const ms = await kit.drained(world.sink, all, 180_000);
        // a "sent" mark lost in the failover would show as a second copy once the row's lease (30 s), the reconciler's
        // grace (5 s) and its next pass (5 s) ran out: wait past that
        await kit.sleep(Math.max(0, promotedAt + 45_000 - Date.now()));
        const d = await kit.delivery(world.sink, all);
        const received = [...d.received.values()].flat();
        const firstAccepted = Math.min(...during.filter((s) => s.ids.length).map((s) => s.at));
        const firstDelivered = Math.min(...received.filter((t) => t >= promotedAt));
        const acceptedAgainMs = Number.isFinite(firstAccepted) ? Math.max(0, firstAccepted - promotedAt) : null;
        const deliveredAgainMs = Number.isFinite(firstDelivered) ? firstDelivered - promotedAt : null;
        const window = d.duplicateIds.map((id) => d.received.get(id)![0]! - killedAt).sort((a, b) => a - b);
        const lines = failoverLines(kit, world);
        const exited = [...world.apis.map((a) => a.service), ...world.workers].filter((s) => s.child.exitCode !== null || s.child.signalCode !== null).length;
        const duringStatuses: Record<string, number> = {};
        for (const s of during.flatMap((x) => x.statuses)) duringStatuses[s] = (duringStatuses[s] ?? 0) + 1;
        const logsMet = lines.every((l) => l.warn.length === 1 && l.back.length === 1 && l.back[0] === `127.0.0.1:${PORTS.nodes[1]}`);
        return {
          ...pick(d),
          drainSeconds: seconds(ms),
          duringFault: {
            deliveredAtKill: atKill,
            formationAtKill: beforeKill.map((s) => `${s.name} ${s.reported}`),
            promotionSecondsAfterKill: seconds(promotedAt - killedAt),
            acceptingAgainSecondsAfterPromotion: seconds(acceptedAgainMs),
            deliveringAgainSecondsAfterPromotion: seconds(deliveredAgainMs),
            sendsDuringFailover: { sends: DURING, accepted: during.filter((s) => s.ids.length).length, answers: duringStatuses },
            duplicatesFirstCopyMsFromKill: window,
            processesExited: exited,
            logs: lines.map((l) => ({ file: l.file, warn: l.warn, back: l.back })),
          },
          target: `0 lost; duplicates only within the SMTP window (first copy within ${SMTP_WINDOW_MS} ms of the kill); accepting and delivering again within 30 s of the promotion, no restart; each process one warn and one info line`,
          met:
            beforeKill[0]?.reported === 'primary' &&
            d.lost === 0 &&
            d.accepted === BEFORE + DURING &&
            window.every((t) => Math.abs(t) <= SMTP_WINDOW_MS) &&
            acceptedAgainMs !== null && acceptedAgainMs <= 30_000 &&
            deliveredAgainMs !== null && deliveredAgainMs <= 30_000 &&
            exited === 0 &&
            logsMet,
        };
      },
    },
  };
}
