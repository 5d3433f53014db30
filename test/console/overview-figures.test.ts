import request from 'supertest';
import { runBroadcast } from '../../apps/core/src/broadcasts/run';
import { createBroadcast } from '../../apps/core/src/broadcasts/service';
import { db, rawQuery } from '../../apps/core/src/db';
import { DeliveryQueue } from '../../apps/core/src/delivery/outbox';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addActive, broadcastTenant } from '../broadcasts/support';

/**
 * The console's figures after a known number of sends, read as an operator reads them: the overview's "Messages by
 * status" (exact on a table this size, with no ANALYZE having run) and a running broadcast's rate (the copies of the
 * last 60 seconds, not an average over minutes before it began).
 */
jest.setTimeout(180_000);

const ctx = useApi();
const sink = useMail({ queues: ['delivery'], concurrency: 10 });
const SENT = 1200;

async function signedIn() {
  const agent = request.agent(ctx.api.app);
  const signin = await agent.get('/admin/signin');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
  await agent.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }).expect(303);
  return agent;
}

it(`after ${SENT} copies of a broadcast, the overview counts them by status exactly and the live rate says ${SENT} in the last minute`, async () => {
  const t = await broadcastTenant(sink.url);
  await addActive(t.listId, SENT, 'figures');
  const created = await createBroadcast(db(), { list: t.list.key, subject: 'Figures', text: 'Hello {{name}}' });
  await db().broadcast.update({ where: { id: created.id }, data: { status: 'sending', runs: 1 } });
  expect(await runBroadcast(db(), new DeliveryQueue(), created.id)).toBe('sent');
  // the broadcast stays on its page's live view while it is "sending": kept so for the page below
  await db().broadcast.update({ where: { id: created.id }, data: { status: 'sending' } });
  await waitFor(() => sink.messages.filter((m) => m.envelope.to[0]!.startsWith('figures-')).length >= SENT, { timeout: 150_000, what: `${SENT} copies at the sink` });
  await waitFor(async () => (await db().message.count({ where: { broadcastId: created.id, status: 'sent' } })) === SENT, { what: 'every copy marked sent' });

  const agent = await signedIn();
  const overview = await agent.get('/admin').expect(200);
  const section = overview.text.slice(overview.text.indexOf('<h2>Messages by status'));
  expect(section).toMatch(/^<h2>Messages by status <span class="muted">\(exact\)<\/span><\/h2>/);
  expect(section).not.toContain('No statistics yet');
  expect(section).toContain(`<tr><th>sent</th><td>${SENT}</td></tr>`);

  // the rate counts what the rows say went out in the last 60 seconds: all of them, when the last minute holds them all
  const [{ oldest }] = (await rawQuery<{ oldest: number }>(
    db(),
    `SELECT extract(epoch FROM now() - min(updated_at))::float8 AS oldest FROM messages WHERE broadcast_id = $1`,
    [created.id],
  )) as [{ oldest: number }];
  const page = await agent.get(`/admin/broadcasts/${created.id}`).expect(200);
  const rate = Number(/<strong id="rate">(\d+)<\/strong> copies delivered in the last minute/.exec(page.text)?.[1]);
  if (oldest < 55) expect(rate).toBe(SENT);
  else expect(rate).toBeLessThanOrEqual(SENT); // a slow machine: the first copies are over a minute old already
  expect(rate).toBeGreaterThan(0);
  expect(page.text).toMatch(new RegExp(`copies delivered in the last minute · ${SENT} delivered, 0 bounced`));
});
