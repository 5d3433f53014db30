/**
 * The main phase: accept (the API alone against bare Express, in turns), delivery (one worker against nodemailer's
 * pool, both DKIM-signing, in turns), `Prefer: wait`, subscriber and prospect adds; their peak RSS.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { plainMail, rawPool } from './nodemailer-pool';
import { acceptCpu, cpuMs, cpuMsByName, mainThreadMs, peakRssMb, perRequest, start, stop } from './processes';
import { admin, jsonHeaders, makeTenant, pgCounters, resetSink, sendBody, settle, sinkCount, sinkSigned, until, up } from './service';
import { CONNECTIONS, MESSAGES, ONLY, PORTS, SECONDS, WARMUP_MESSAGES } from './settings';
import { combined, DELIVERY_TURNS, inTurns, load, meanOf, pipelineCpuRatio, TURNS, type Load } from './turns';

export async function mainPhases(results: Record<string, unknown>, serviceEnv: (phase: string) => Record<string, string>, sink: ChildProcess): Promise<void> {
  {
    // 1. accept (left out by BENCH_ONLY=delivery)
    const acceptRss = ONLY === 'delivery' ? 0 : await acceptPhase(results, serviceEnv);
    if (ONLY === 'accept') return;

    // 2. delivery: MESSAGES accepted sends drained by one worker, against nodemailer's pool straight to the sink; both
    // sides DKIM-sign every email with the same RSA key
    const env = serviceEnv('delivery');
    const api = start('apps/api/src/server.ts', env);
    await up(PORTS.api);
    const tenant = await makeTenant(PORTS.sinkSmtp, { dkim: true });
    const worker = start('apps/worker/src/main.ts', env);
    await resetSink();
    await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: CONNECTIONS, amount: WARMUP_MESSAGES });
    await until(async () => (await sinkCount()) >= WARMUP_MESSAGES, 5 * 60_000, 'the delivery phase\'s warm-up deliveries');
    await resetSink();
    await settle(env.DATABASE_URL);
    // our side and nodemailer's in turns, as in the accept phase; the CPU and Postgres figures are of our turns
    const seconds = { ours: 0, bare: 0 };
    let acceptErrors = 0;
    const perEmail = { cpu: [] as Record<string, number>[], pg: [] as Record<string, number>[] };
    const ourTurn = async () => {
      await resetSink();
      const pg0 = await pgCounters(env.DATABASE_URL!);
      const cpu0 = { api: cpuMs(api), worker: cpuMs(worker), sink: cpuMs(sink), ...cpuMsByName(['postgres', 'redis-server']) };
      const t0 = performance.now();
      const accepted = await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: CONNECTIONS, amount: MESSAGES });
      await until(async () => (await sinkCount()) >= MESSAGES, 10 * 60_000, `${MESSAGES} deliveries`);
      seconds.ours += (performance.now() - t0) / 1000;
      const cpu1 = { api: cpuMs(api), worker: cpuMs(worker), sink: cpuMs(sink), ...cpuMsByName(['postgres', 'redis-server']) };
      if ((await sinkSigned()) < MESSAGES) throw new Error('bench: the worker sent emails without a DKIM signature');
      acceptErrors += accepted.errors + accepted.non2xx;
      perEmail.cpu.push(perRequest(cpu0, cpu1, MESSAGES));
      // the statements' count shows as transactions: every statement of the hot path is its own (or a batch's) transaction
      perEmail.pg.push(perRequest(pg0, await pgCounters(env.DATABASE_URL!), MESSAGES, 2));
    };
    // nodemailer with its key parsed once (the best it does) and as PEM text (for reference), each side in turns with ours
    const bareCpu = { key: [] as number[], pem: [] as number[] };
    const pemSeconds = { value: 0 };
    const bareTurn = async () => {
      const best = await rawPool(MESSAGES, plainMail, { dkim: 'key' });
      seconds.bare += best.seconds;
      bareCpu.key.push(best.cpuMsPerEmail);
      const pem = await rawPool(MESSAGES, plainMail, { dkim: 'pem' });
      pemSeconds.value += pem.seconds;
      bareCpu.pem.push(pem.cpuMsPerEmail);
    };
    await inTurns(DELIVERY_TURNS, ourTurn, bareTurn);
    const workerRss = peakRssMb(worker);
    const deliveryApiRss = peakRssMb(api);
    const cpuMsPerEmail = meanOf(perEmail.cpu);
    const mean = (figures: number[]) => +(figures.reduce((a, b) => a + b, 0) / figures.length).toFixed(3);
    const nodemailerCpuMsPerEmail = mean(bareCpu.key);
    const nodemailerPemCpuMsPerEmail = mean(bareCpu.pem);
    const ratioBest = +(seconds.bare / seconds.ours).toFixed(2);
    const pipelineCpuRatioBest = pipelineCpuRatio(cpuMsPerEmail, nodemailerCpuMsPerEmail);
    results.delivery = {
      messages: MESSAGES,
      turns: DELIVERY_TURNS,
      acceptErrors,
      perSecond: Math.round((MESSAGES * DELIVERY_TURNS) / seconds.ours),
      baselinePerSecond: Math.round((MESSAGES * DELIVERY_TURNS) / seconds.bare),
      // against the strongest baseline (nodemailer given a KeyObject); `ratio` and `pipelineCpuRatio` are kept as their
      // old names for readers of results.json
      ratio: ratioBest,
      ratioBest,
      pemPerSecond: Math.round((MESSAGES * DELIVERY_TURNS) / pemSeconds.value),
      ratioPem: +(pemSeconds.value / seconds.ours).toFixed(2),
      workerPeakRssMb: workerRss,
      apiPeakRssMb: deliveryApiRss,
      cpuMsPerEmail,
      nodemailerCpuMsPerEmail,
      nodemailerPemCpuMsPerEmail,
      pipelineCpuRatio: pipelineCpuRatioBest,
      pipelineCpuRatioBest,
      pipelineCpuRatioPem: pipelineCpuRatio(cpuMsPerEmail, nodemailerPemCpuMsPerEmail),
      postgresPerEmail: meanOf(perEmail.pg),
    };
    if (ONLY === 'delivery') {
      await stop(worker);
      await stop(api);
      return;
    }

    // 2b. Prefer: wait: each request holds its connection until its copy is delivered (the worker announces, the API
    // wakes the waiter); 20 connections, against the same sends answered 202 at once in the accept phase
    await settle(env.DATABASE_URL);
    const cpuBefore = cpuMs(api);
    const waited = await load({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: { ...jsonHeaders(tenant.token), Prefer: 'wait=10' }, body: sendBody, connections: 20 });
    results.wait = { ...waited, apiCpuMsPerRequest: +((cpuMs(api) - cpuBefore) / Math.max(1, waited.total2xx + waited.non2xx)).toFixed(2) };
    // the API's high-water mark after each load of this process, to see which one sets the peak
    const apiPeakAfter: Record<string, number> = { delivery: deliveryApiRss, wait: peakRssMb(api) };

    // 3. subscribers: lists without confirmation; lists rotate so the 600-an-hour limit per list is not what is measured
    // (100 lists took 60,000 adds an hour, fewer than 17 s at 3,700 a second: the last ones were refused with 429)
    const lists: string[] = [];
    for (let i = 0; i < 300; i++) {
      const { list } = await admin<{ list: { key: string } }>('/lists', { account: tenant.account, name: `bench ${i}`, confirm: false, mailbox: tenant.mailbox });
      lists.push(list.key);
    }
    let n = 0;
    const addSubscribers: autocannon.Options = {
      url: `http://127.0.0.1:${PORTS.api}`,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/subscribers',
          headers: jsonHeaders(tenant.token),
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ list: lists[n % lists.length], email: `s${n++}@example.com`, name: 'Reader' }) }),
        },
      ],
    };
    await load({ ...addSubscribers, duration: 2 }); // warm-up, as for the accept phase
    await settle(env.DATABASE_URL);
    const subscribers = await load(addSubscribers);
    results.subscribers = subscribers;
    apiPeakAfter.subscribers = peakRssMb(api);

    // 4. prospects: 100 per request into a draft campaign
    const { campaign } = await admin<{ campaign: { id: number } }>('/campaigns', {
      account: tenant.account,
      name: 'bench',
      goal: 'links',
      mailbox: tenant.mailbox,
      steps: [{ subject: 'Hi {{name}}', body: 'Hello', delay_hours: 1 }],
    });
    let p = 0;
    const addProspects: autocannon.Options = {
      url: `http://127.0.0.1:${PORTS.api}`,
      connections: 10,
      requests: [
        {
          method: 'POST',
          path: '/api/v1/prospects',
          headers: jsonHeaders(tenant.token),
          setupRequest: (req) => ({
            ...req,
            body: JSON.stringify({ campaign: campaign.id, prospects: Array.from({ length: 100 }, () => ({ email: `p${p++}@site${p % 997}.example`, name: 'Pat' })) }),
          }),
        },
      ],
    };
    await load({ ...addProspects, duration: 2 }); // warm-up
    await settle(env.DATABASE_URL);
    const prospects = await load(addProspects);
    results.prospects = { ...prospects, prospectsPerSecond: Math.round((prospects.total2xx * 100) / SECONDS) };
    apiPeakAfter.prospects = peakRssMb(api);
    results.memory = { apiPeakRssMb: Math.max(acceptRss, peakRssMb(api)), workerPeakRssMb: Math.max(workerRss, peakRssMb(worker)), apiPeakAfter: { accept: acceptRss, ...apiPeakAfter } };
    await stop(worker);
    await stop(api);
  }
}

/** The lone client's window, each side. */
const LONE_SECONDS = 3;

/** The accept phase: the API alone (no worker) against bare Express, loaded in turns; returns the API's peak RSS. */
async function acceptPhase(results: Record<string, unknown>, serviceEnv: (phase: string) => Record<string, string>): Promise<number> {
  const baseline = start('bench/baseline-express.ts', { PORT: String(PORTS.baseline) });
  await until(async () => (await fetch(`http://127.0.0.1:${PORTS.baseline}/api/v1/send`, { method: 'POST', headers: jsonHeaders(), body: sendBody })).status === 202, 30_000, 'baseline');
  const acceptEnv = serviceEnv('accept');
  const api = start('apps/api/src/server.ts', acceptEnv);
  await up(PORTS.api);
  const tenant = await makeTenant();
  const bare: autocannon.Options = { url: `http://127.0.0.1:${PORTS.baseline}/api/v1/send`, method: 'POST', headers: jsonHeaders(), body: sendBody };
  const ours: autocannon.Options = { url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody };
  // first a lone client that waits for each answer, as most programs send (its time a send is the whole round trip),
  // before the load below has made every statement's batches large
  const lone = { connections: 1, duration: LONE_SECONDS };
  await load({ ...bare, ...lone, duration: 1 });
  await load({ ...ours, ...lone, duration: 1 });
  const loneBare = await load({ ...bare, ...lone });
  const loneBefore = acceptCpu(api);
  const loneOurs = await load({ ...ours, ...lone });
  const loneCpu = perRequest(loneBefore, acceptCpu(api), loneOurs.total2xx);
  await load({ ...bare, duration: 2 });
  await load({ ...ours, duration: 2 });
  await settle(acceptEnv.DATABASE_URL);
  const windows = { bare: [] as Load[], ours: [] as Load[] };
  const cpu = { bare: [] as Record<string, number>[], ours: [] as Record<string, number>[] };
  // each server's main thread a second of its turns: how long it ran, how long it waited for a core
  const thread = { bare: [] as Record<string, number>[], ours: [] as Record<string, number>[] };
  const turn = (side: 'bare' | 'ours', server: ChildProcess, options: autocannon.Options) => async () => {
    const before = acceptCpu(server);
    const [threadBefore, started] = [mainThreadMs(server), performance.now()];
    const window = await load({ ...options, duration: SECONDS / TURNS });
    windows[side].push(window);
    cpu[side].push(perRequest(before, acceptCpu(server), window.total2xx));
    thread[side].push(perRequest(threadBefore, mainThreadMs(server), (performance.now() - started) / 1000, 0));
  };
  await inTurns(TURNS, turn('bare', baseline, bare), turn('ours', api, ours));
  const acceptRss = peakRssMb(api);
  await stop(api);
  await stop(baseline);
  const accept = combined(windows.ours);
  const acceptBaseline = combined(windows.bare);
  results.accept = {
    api: accept,
    baseline: acceptBaseline,
    ratio: +(accept.rps / acceptBaseline.rps).toFixed(2),
    turns: windows.ours.map((w, i) => +(w.rps / windows.bare[i]!.rps).toFixed(2)),
    apiPeakRssMb: acceptRss,
    cpuMsPerRequest: { api: meanOf(cpu.ours), baseline: meanOf(cpu.bare) },
    mainThreadMsPerSecond: { api: meanOf(thread.ours), baseline: meanOf(thread.bare) },
    oneConnection: { api: loneOurs.rps, baseline: loneBare.rps, cpuMsPerRequest: loneCpu },
  };
  return acceptRss;
}
