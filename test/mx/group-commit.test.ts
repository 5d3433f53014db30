import nodemailer from 'nodemailer';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { wantEvents } from '../helpers/factories';
import { inboundDomain, message, useMx } from './support';

/**
 * The MX writes the messages of many sessions with one statement (docs/mx.md, "Durable before 250"): each session
 * still gets its own 250 with its own id, once its message and its event are stored, none lost or doubled.
 */
jest.setTimeout(60_000);

const dns = useDns(['many.test'], [txt('many.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const mx = useMx(dns);
const SESSIONS = 40;

it('answers 40 sessions sending at once each with the id of its own stored message, and writes one inbound.received for each', async () => {
  const tenant = await inboundDomain(ctx.api, 'in-many.test', [{ match: '*', action: 'webhook' }]);
  await wantEvents(tenant.account.id, ['inbound.received']);
  const answers = await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: mx.port, secure: false, tls: { rejectUnauthorized: false } });
      const raw = await message({ From: 'ann@many.test', To: `box${i}@in-many.test`, Subject: `Message ${i}` }, `Body ${i}`);
      const info = await transport.sendMail({ envelope: { from: 'ann@many.test', to: [`box${i}@in-many.test`] }, raw });
      return { i, raw, id: /OK: ([0-9a-f-]{36})$/.exec(info.response)![1]! };
    }),
  );
  const rows = await db().mxMessage.findMany({ where: { accountId: tenant.account.id } });
  expect(rows).toHaveLength(SESSIONS);
  expect(new Set(answers.map((a) => a.id)).size).toBe(SESSIONS);
  for (const { i, raw, id } of answers) {
    // the id a session was answered is the row of its own message, with its own bytes, every one and no other
    const row = rows.find((r) => r.id === id)!;
    expect(row).toMatchObject({ subject: `Message ${i}`, rcptTo: [`box${i}@in-many.test`], status: 'delivered', size: Buffer.byteLength(raw) });
    expect(Buffer.from(row.raw).toString()).toBe(raw);
  }
  const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'inbound.received' } });
  expect(events.map((e) => (e.data as { id: string }).id).sort()).toEqual(answers.map((a) => a.id).sort());
});
