/** The bench's table: one row a figure, beside its baseline or target, from results.json's shape. */

export function print(r: Record<string, any>): void {
  const rows: [string, string, string][] = !r.accept ? [] : [
    ['accept: POST /api/v1/send, 1 recipient, 50 connections', `${r.accept.api.rps} req/s, p50 ${r.accept.api.p50} ms, p99 ${r.accept.api.p99} ms, ${r.accept.api.errors + r.accept.api.non2xx} errors`, `bare Express ${r.accept.baseline.rps} req/s (p99 ${r.accept.baseline.p99} ms): ratio ${r.accept.ratio} (turns ${r.accept.turns.join(', ')})`],
    ['accept: CPU per request (ms), ours / bare Express', Object.keys(r.accept.cpuMsPerRequest.api).map((k) => `${k} ${r.accept.cpuMsPerRequest.api[k]} / ${r.accept.cpuMsPerRequest.baseline[k]}`).join(', '), ''],
    ...((r.accept.mainThreadMsPerSecond ? [['accept: the server\'s main thread a second (ms), ours / bare Express', `ran ${Math.round(r.accept.mainThreadMsPerSecond.api.ran)} / ${Math.round(r.accept.mainThreadMsPerSecond.baseline.ran)}, waited for a core ${Math.round(r.accept.mainThreadMsPerSecond.api.waited)} / ${Math.round(r.accept.mainThreadMsPerSecond.baseline.waited)}`, '']] : []) as [string, string, string][]),
    ...((r.accept.oneConnection ? [['accept: one connection, each answer awaited', `${r.accept.oneConnection.api} req/s (${(1000 / r.accept.oneConnection.api).toFixed(2)} ms a send); CPU a send: ${Object.entries(r.accept.oneConnection.cpuMsPerRequest).map(([k, v]) => `${k} ${v}`).join(', ')}`, `bare Express ${r.accept.oneConnection.baseline} req/s`]] : []) as [string, string, string][]),
  ];
  if (r.delivery) rows.push(
    [`delivery: ${r.delivery.messages} sends x ${r.delivery.turns} turns, accept to last delivered, 1 worker`, `${r.delivery.perSecond} msg/s`, `nodemailer pool direct, key parsed once ${r.delivery.baselinePerSecond} msg/s: ratioBest ${r.delivery.ratioBest} (target >= 1.0); key as PEM text ${r.delivery.pemPerSecond} msg/s: ratio ${r.delivery.ratioPem}`],
    ['delivery: CPU per email, by process', Object.entries(r.delivery.cpuMsPerEmail as Record<string, number>).map(([k, v]) => `${k} ${v} ms`).join(', '), `nodemailer's own ${r.delivery.nodemailerCpuMsPerEmail} ms (PEM text ${r.delivery.nodemailerPemCpuMsPerEmail} ms): pipeline (API + worker + Postgres + Redis) ratioBest ${r.delivery.pipelineCpuRatioBest} (target <= 1.5), against PEM ${r.delivery.pipelineCpuRatioPem}`],
    ['delivery: Postgres per email (pg_stat_database)', Object.entries(r.delivery.postgresPerEmail as Record<string, number>).map(([k, v]) => `${k} ${v}`).join(', '), ''],
  );
  // BENCH_ONLY=delivery stops after the delivery rows
  if (r.wait) rows.push(
    ['Prefer: wait=10 on POST /api/v1/send, 20 connections, answered once delivered', `${r.wait.rps} req/s, p50 ${r.wait.p50} ms, p99 ${r.wait.p99} ms, ${r.wait.errors + r.wait.non2xx} errors; API CPU ${r.wait.apiCpuMsPerRequest} ms a request`, ''],
    ['subscribers: POST /api/v1/subscribers, 50 connections', `${r.subscribers.rps} req/s, p99 ${r.subscribers.p99} ms, ${r.subscribers.errors + r.subscribers.non2xx} errors`, `${(r.subscribers.rps / r.accept.api.rps).toFixed(2)} of the accept rate (target >= 0.5, p99 < 50 ms)`],
    ['prospects: POST /api/v1/prospects, 100 per request, 10 connections', `${r.prospects.prospectsPerSecond} prospects/s (p99 ${r.prospects.p99} ms)`, ''],
    ['memory: peak RSS', `API ${r.memory.apiPeakRssMb} MB, worker ${r.memory.workerPeakRssMb} MB`, 'target: under 250 MB each'],
  );
  if (r.memory?.trickle) {
    const t = r.memory.trickle;
    const b = r.memory.bigSends;
    rows.push([
      `memory: ${t.connections} unauthenticated clients trickling a 1 MB body`,
      `API peak RSS ${t.apiPeakRssMb} MB; ${t.openAfter5s} connections still open after 5 s, the longest ${t.longestOpenMs} ms; answers ${JSON.stringify(t.answers)}`,
      'target: under 250 MB',
    ]);
    const st = r.memory.strangers;
    if (st) {
      rows.push([
        `hardening: ${st.strangers} strangers trickling 1 MB bodies (unknown route, admin API, wrong key) vs ${st.sends} sends`,
        `answers ${JSON.stringify(st.statuses)}, p50 ${st.p50Ms} ms, p99 ${st.p99Ms} ms`,
        'target: all 202, p99 under 100 ms',
      ]);
    }
    const pp = r.memory.publicPages;
    if (pp) {
      rows.push([
        `hardening: ${pp.strangers} strangers from ${pp.addresses} addresses trickling 16 KB form bodies vs ${pp.signUps.requests} sign-ups and ${pp.unsubscribes.requests} one-click unsubscribes`,
        `sign-ups ${JSON.stringify(pp.signUps.statuses)}, p50 ${pp.signUps.p50Ms} ms, p99 ${pp.signUps.p99Ms} ms; unsubscribes ${JSON.stringify(pp.unsubscribes.statuses)}, p50 ${pp.unsubscribes.p50Ms} ms, p99 ${pp.unsubscribes.p99Ms} ms`,
        'target: all 200, p99 under 100 ms',
      ]);
    }
    const ut = r.memory.unsubscribeTrickle;
    if (ut) {
      for (const [what, u] of [[`${ut.fromAddresses.strangers} strangers from ${ut.fromAddresses.addresses} addresses`, ut.fromAddresses], [`${ut.fromOne64.strangers} strangers from one IPv6 /64`, ut.fromOne64]] as const) {
        rows.push([
          `hardening: ${what} trickling 512-byte bodies at one-click links vs ${u.unsubscribes.requests} one-click unsubscribes`,
          `unsubscribes ${JSON.stringify(u.unsubscribes.statuses)}, p50 ${u.unsubscribes.p50Ms} ms, p99 ${u.unsubscribes.p99Ms} ms`,
          'target: all 200, p99 under 100 ms',
        ]);
      }
    }
    const idle = r.memory.idleFlood;
    if (idle) {
      rows.push([
        `hardening: ${idle.connections} connections from one address that never send a byte`,
        `API sockets open after 1 s ${idle.openAfter1s}, after 8 s ${idle.openAfter8s}; API peak RSS ${idle.apiPeakRssMb} MB`,
        'target: bounded by the per-client cap (256), none after 8 s, under 250 MB',
      ]);
    }
    const rf = r.memory.refusals;
    if (rf) {
      rows.push([
        `memory: ${rf.connections} kept-alive connections sending with an unknown key for ${rf.seconds} s`,
        `${rf.perSecond} refusals/s, answers ${JSON.stringify(rf.statuses)}; API peak RSS ${rf.apiPeakRssMb} MB`,
        'target: under 250 MB',
      ]);
    }
    rows.push([
      `memory: ${b.requests} requests x 50 recipients x ${b.attachmentKb} KB attachment (${b.copies} copies), 1 worker`,
      `API peak RSS ${b.apiPeakRssMb} MB, worker ${b.workerPeakRssMb} MB; delivered in ${b.deliveredSeconds} s; answers ${JSON.stringify(b.statuses)}`,
      'target: under 250 MB each',
    ]);
  }
  if (r.templates) {
    const t = r.templates;
    rows.push([
      `templates: ${t.messages} sends x ${t.turns} turns with a ${Math.round(t.layoutBytes / 1024)} KB layout and ${t.variables} variables, accept to last delivered`,
      `${t.templatePerSecond} msg/s, the same emails plain ${t.plainPerSecond} msg/s: ratio ${t.ratio} (refused or timed out: plain ${t.refused.plain}, template ${t.refused.template})`,
      'target: ratio >= 0.95',
    ]);
  }
  if (r.batch) {
    const b = r.batch;
    rows.push([
      `batch: ${b.messages} messages x ${b.turns} turns, POST /send/batch (100 a request) against POST /send, the API alone`,
      `${b.batchMessagesPerSecond} msg/s in batches, ${b.singlePerSecond} msg/s one by one: ratio ${b.ratio}; p99 ${JSON.stringify(b.p99Ms)} ms (refused: ${JSON.stringify(b.refused)})`,
      'target: ratio >= 0.9',
    ]);
  }
  if (r.growth) {
    const g = r.growth;
    for (const f of g.phases) rows.push([`growth: ${f.name}`, `empty ${f.empty}, grown ${f.grown}: ratio ${f.ratio}`, f.limitMs ? `target: grown under ${f.limitMs} ms` : 'target: ratio >= 0.9']);
    rows.push([
      `growth: broadcast to ${g.broadcast.subscribers.toLocaleString('en')} subscribers (${g.rows.messages.toLocaleString('en')} messages; filled in ${g.rows.fillSeconds} s${g.rows.reused ? ', kept' : ''})`,
      `snapshot ${g.broadcast.snapshotSeconds} s, ${g.broadcast.perSecond} copies/s over the first ${g.broadcast.measured.toLocaleString('en')}, worker peak RSS ${g.broadcast.workerPeakRssMb} MB`,
      'target: worker under 250 MB',
    ]);
    rows.push([
      `growth: segment dry run on ${g.broadcast.subscribers.toLocaleString('en')} subscribers`,
      `country=DE and not clicked: ${g.segment.notClickedSeconds} s (${g.segment.notClickedCount}); country=DE: ${g.segment.fieldSeconds} s (${g.segment.fieldCount})`,
      'target: within 2 s',
    ]);
  }
  if (r.scheduler) {
    const c = r.scheduler;
    rows.push([
      `scheduler: ${c.prospects} due prospects, 200 running campaigns, 50 mailboxes`,
      `claim ${c.tickAllFreeMs} ms a tick with every mailbox free (${c.cpuPerMinuteAllFreeMs} ms a minute), ${c.tickAllInGapMs} ms with every mailbox in its gap; ${c.stepsPerSecond} steps/s written and delivered by 1 worker`,
      `1,200 due on one mailbox with a 60 s gap: ${c.oneGappedMailbox1200.tickMs} ms a tick, ${c.oneGappedMailbox1200.claimed} queued, ${c.oneGappedMailbox1200.cpuPerMinuteMs} ms a minute (before: 4,700-5,300 ms a minute)`,
    ]);
    rows.push([
      `scheduler: sending windows on every campaign (docs/outreach.md)`,
      `claim ${c.windows.tickAllFreeMs} ms a tick with every mailbox free (without windows: ${c.tickAllFreeMs} ms)`,
      `window check of ${c.prospects} prospects in 24 zones: ${c.windows.check100kMs} ms (${c.windows.checkUsPerProspect} µs a prospect)`,
    ]);
    if (c.rotation) {
      rows.push([
        `scheduler: every campaign rotating over 5 of the 50 mailboxes (docs/campaigns.md)`,
        `claim ${c.rotation.tickAllFreeMs} ms a tick before any first step (${c.rotation.claimed} claimed), ${c.rotation.tickHalfStartedMs} ms with half the prospects started from their mailbox`,
        `one mailbox a campaign: ${c.tickAllFreeMs} ms`,
      ]);
    }
    if (c.branches) {
      rows.push([
        `scheduler: every campaign a branched sequence (an email, a condition, two branches: docs/outreach.md)`,
        `claim ${c.branches.tickAllFreeMs} ms a tick before any first step (turns ${c.branches.branchedTurnsMs.join(' / ')}), ${c.branches.tickHalfAtConditionMs} ms with half the prospects at the condition, due`,
        `the linear sequence in the same turns: ${c.branches.linearMs} ms (${c.branches.linearTurnsMs.join(' / ')})`,
      ]);
    }
  }
  if (r.smtp) {
    const m = r.smtp.memory;
    rows.push([`smtp: nodemailer pool (50) submitting ${r.smtp.messagesPerTurn} emails x 3 turns`, `${r.smtp.smtpAcceptsPerSecond} accepts/s`, `same emails to POST /api/v1/send ${r.smtp.apiAcceptsPerSecond}/s: ratio ${r.smtp.ratio} (target >= 0.8; issue 75: >= 0.9); CPU an accept SMTP process ${r.smtp.cpuMsPerAccept?.smtp} ms, API ${r.smtp.cpuMsPerAccept?.api} ms; Postgres and Redis ${r.smtp.cpuMsPerAccept?.postgresAndRedis?.smtp} / ${r.smtp.cpuMsPerAccept?.postgresAndRedis?.api} ms; clients ${r.smtp.cpuMsPerAccept?.client?.smtp} / ${r.smtp.cpuMsPerAccept?.client?.api} ms`]);
    rows.push([`smtp: ${m.idleConnections} idle connections, ${m.bigClients} clients sending ${m.bigMessages} 1 MB messages`, `SMTP process peak RSS ${m.smtpPeakRssMb} MB; ${m.bigAccepted} accepted in ${m.bigSeconds} s`, 'target: under 250 MB']);
  }
  if (r.mx) {
    const m = r.mx;
    rows.push([`mx: nodemailer pool (50) sending ${m.messagesPerTurn} messages x ${m.turns.mx.length} turns to a webhook route`, `${m.mxAcceptsPerSecond} msg/s (turns ${m.turns.mx.join(', ')}), CPU ${m.cpuMsPerMessage.mx} ms a message (Postgres ${m.cpuMsPerMessage.postgres}, load generator ${m.cpuMsPerMessage.client})`, `bare smtp-server ${m.bareSmtpServerPerSecond} msg/s (turns ${m.turns.bare.join(', ')}, CPU ${m.cpuMsPerMessage.bare} ms): ratio ${m.ratio} (target >= 0.8)`]);
    rows.push([`mx: ${m.memory.connections} connections sending ${m.memory.messages} messages of 100 KB`, `MX peak RSS ${m.memory.mxPeakRssMb} MB; ${m.memory.accepted} accepted`, 'target: under 250 MB']);
  }
  if (r.scale) {
    for (const row of r.scale.rows) {
      rows.push([`scale: ${r.scale.messages} sends, sink ${r.scale.sinkDelayMs} ms an email, ${row.workers} worker(s)`, `${row.perSecond} msg/s`, `nodemailer pool of ${row.baselineConnections} connections ${row.baselinePerSecond} msg/s: ratio ${row.ratio}`]);
    }
  }
  if (r.domains) {
    const d = r.domains;
    rows.push([`domains: ${d.domains} sending domains checked against a local dnsmasq (docs/domains.md)`, `${d.seconds} s, ${d.verified} verified`, 'target: under 10 s']);
  }
  if (r.broadcast) {
    const b = r.broadcast;
    rows.push([`broadcast: ${b.subscribers} active subscribers, PATCH to last copy, 1 worker`, `${b.perSecond} msg/s, worker peak RSS ${b.workerPeakRssMb} MB`, `nodemailer pool direct ${b.baselinePerSecond} msg/s: ratio ${b.ratio} (target >= 0.7, RSS < 250 MB)`]);
  }
  console.log(`\n${r.date}  ${r.machine}\n`);
  console.log('| what | figure | baseline |\n|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}
