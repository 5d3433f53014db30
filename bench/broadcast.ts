/**
 * The broadcast phase: BROADCAST_SUBSCRIBERS active subscribers (inserted with one SQL statement) sent by one worker,
 * from the PATCH that starts it to the last copy at the sink, against nodemailer's pool sending as many; the worker's
 * peak RSS.
 */
import autocannon from 'autocannon';
import { Client } from 'pg';
import { htmlToText } from '../apps/core/src/delivery/compose';
import { rawPool } from './nodemailer-pool';
import { peakRssMb, start, stop } from './processes';
import { admin, jsonHeaders, makeTenant, resetSink, sendBody, settle, sinkCount, until, up } from './service';
import { ADMIN_TOKEN, BROADCAST_SUBSCRIBERS, PORTS, WARMUP_MESSAGES } from './settings';

export async function broadcastPhase(env: Record<string, string>) {
  const api = start('apps/api/src/server.ts', env);
  await up(PORTS.api);
  const tenant = await makeTenant();
  const { list } = await admin<{ list: { key: string } }>('/lists', { account: tenant.account, name: 'bench', confirm: false, mailbox: tenant.mailbox });
  const pg = new Client({ connectionString: env.DATABASE_URL });
  await pg.connect();
  await pg.query(
    `INSERT INTO subscribers (list_id, email, name, status, confirmed_at, fields)
     SELECT l.id, 'reader' || n || '@example.com', 'Reader ' || n, 'active', now(), jsonb_build_object('n', n)
     FROM lists l, generate_series(1, $2::int) AS n WHERE l.key = $1`,
    [list.key, BROADCAST_SUBSCRIBERS],
  );
  await pg.query('UPDATE lists SET subscriber_count = $2 WHERE key = $1', [list.key, BROADCAST_SUBSCRIBERS]);
  await pg.end();
  const worker = start('apps/worker/src/main.ts', env);
  // warm the worker up through the ordinary send path, outside the timed window. The sink still counts the main
  // phases' emails: without this reset the wait below ended at once, and up to WARMUP_MESSAGES warm-up emails landed
  // inside the timed window, counted as broadcast copies (at 5,000, the clock stopped 2,650 copies early and the
  // worker was told to stop with the broadcast still running)
  await resetSink();
  await autocannon({ url: `http://127.0.0.1:${PORTS.api}/api/v1/send`, method: 'POST', headers: jsonHeaders(tenant.token), body: sendBody, connections: 10, amount: WARMUP_MESSAGES });
  await until(async () => (await sinkCount()) >= WARMUP_MESSAGES, 5 * 60_000, 'the broadcast phase\'s warm-up deliveries');
  await resetSink();
  const { broadcast } = await admin<{ broadcast: { id: number } }>('/broadcasts', { list: list.key, subject: 'Hello {{name}}', html: '<p>Hello {{name}}, number {{fields.n}}.</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>' });
  await settle(env.DATABASE_URL);
  const t0 = performance.now();
  const patched = await fetch(`http://127.0.0.1:${PORTS.api}/admin/api/broadcasts/${broadcast.id}`, {
    method: 'PATCH',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ status: 'sending' }),
  });
  if (!patched.ok) throw new Error(`bench: PATCH broadcast answered ${patched.status}`);
  await until(async () => (await sinkCount()) >= BROADCAST_SUBSCRIBERS, 30 * 60_000, `${BROADCAST_SUBSCRIBERS} broadcast copies`);
  const seconds = (performance.now() - t0) / 1000;
  const workerRss = peakRssMb(worker);
  await stop(worker);
  await stop(api);
  // the baseline sends what a copy is: html with a generated text part and the three list headers
  const { seconds: baselineSeconds } = await rawPool(BROADCAST_SUBSCRIBERS, (i) => {
    const url = `http://127.0.0.1:${PORTS.api}/u/${i}.${'x'.repeat(32)}`;
    const html = `<p>Hello Reader ${i}, number ${i}.</p><p><a href="${url}">Unsubscribe</a></p>`;
    return {
      to: `reader${i}@example.com`,
      subject: `Hello Reader ${i}`,
      html,
      text: htmlToText(html),
      headers: {
        'List-Unsubscribe': { prepared: true, value: `<${url}>` },
        'List-Unsubscribe-Post': { prepared: true, value: 'List-Unsubscribe=One-Click' },
        'List-Id': { prepared: true, value: '"bench" <bench.example.com>' },
      },
    };
  });
  return {
    subscribers: BROADCAST_SUBSCRIBERS,
    perSecond: Math.round(BROADCAST_SUBSCRIBERS / seconds),
    baselinePerSecond: Math.round(BROADCAST_SUBSCRIBERS / baselineSeconds),
    ratio: +(baselineSeconds / seconds).toFixed(2),
    workerPeakRssMb: workerRss,
  };
}
