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

it('answers 40 sessions sending at once each with the ids of its own stored rows, and writes one inbound.received for each', async () => {
  // one sender, one address, one From: its SPF and DMARC are worked out once for the 40 (mx/auth.ts, keptPlainResult)
  const mailauth = require('mailauth') as typeof import('mailauth');
  const spf = jest.spyOn(mailauth, 'spf');
  const tenant = await inboundDomain(ctx.api, 'in-many.test', [
    { match: '*', action: 'webhook' },
    { match: 'copy', action: 'webhook' },
  ]);
  await wantEvents(tenant.account.id, ['inbound.received']);
  const answers = await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: mx.port, secure: false, tls: { rejectUnauthorized: false } });
      // every fourth message reaches a second route too: two rows of one arrival, each with its bytes, amid the others
      const to = i % 4 === 0 ? [`box${i}@in-many.test`, 'copy@in-many.test'] : [`box${i}@in-many.test`];
      const raw = await message({ From: 'ann@many.test', To: to.join(', '), Subject: `Message ${i}` }, `Body ${i} `.repeat(i + 1));
      const info = await transport.sendMail({ envelope: { from: 'ann@many.test', to }, raw });
      return { i, raw, ids: /OK: (.+)$/.exec(info.response)![1]!.split(' ') };
    }),
  );
  const rows = await db().mxMessage.findMany({ where: { accountId: tenant.account.id } });
  const ids = answers.flatMap((a) => a.ids);
  expect(rows).toHaveLength(SESSIONS + SESSIONS / 4);
  expect(new Set(ids).size).toBe(rows.length);
  for (const { i, raw, ids } of answers) {
    expect(ids).toHaveLength(i % 4 === 0 ? 2 : 1);
    // each id a session was answered is a row of its own message, with its own bytes, every one and no other
    for (const id of ids) {
      const row = rows.find((r) => r.id === id)!;
      expect(row).toMatchObject({ subject: `Message ${i}`, status: 'delivered', size: Buffer.byteLength(raw), auth: { spf: { result: 'pass' } } });
      expect(Buffer.from(row.raw).toString()).toBe(raw);
    }
  }
  const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'inbound.received' } });
  expect(events.map((e) => (e.data as { id: string }).id).sort()).toEqual([...ids].sort());
  expect(spf).toHaveBeenCalledTimes(1);
  spf.mockRestore();
});
