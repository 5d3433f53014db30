import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { waitFor } from '../helpers/wait';
import { hook, useLateWorker, useReceiver } from '../webhooks/support';
import { inboundDomain, useMx, withAttachment } from './support';

/**
 * The MX answers 250 without parsing the message's body (docs/mx.md, "Durable before 250"): its `inbound.received` is
 * stored short, and the worker builds its content from the stored message before the first POST, once, keeping it in
 * the event, so every endpoint and every retry gets the same body.
 */
const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const first = useReceiver();
const second = useReceiver();
const worker = useLateWorker();
const mx = useMx(dns);

it("stores the event short at the 250 and builds what the receiver gets (reply_text, attachments) once, before its first POST: a retry and a second endpoint get the same body", async () => {
  const tenant = await inboundDomain(ctx.api, 'in-later.test', [{ match: 'help', action: 'webhook' }]);
  await hook(ctx.api, tenant.account.id, first, ['inbound.received']);
  await hook(ctx.api, tenant.account.id, second, ['inbound.received']);
  const attachment = crypto.randomBytes(2000);
  // a reply quoting the message it answers, its From's name and its Subject in encoded words
  const quoted = 'On Tue, 2 Jun 2026 at 09:00, Help <help@in-later.test> wrote:\n> Open the tray.\n';
  const reply = { from: 'Ann =?utf-8?q?M=C3=BCller?= <ann@plain.test>', to: 'help@in-later.test', subject: '=?utf-8?q?Re:_Dr=C3=BCcker?=', inReplyTo: '<earlier@ours.test>', text: `Still jammed.\n\n${quoted}` };
  const raw = await withAttachment(reply, { filename: 'jam.bin', content: attachment });
  const info = await nodemailer.createTransport({ host: '127.0.0.1', port: mx.port, secure: false, tls: { rejectUnauthorized: false } }).sendMail({ envelope: { from: 'ann@plain.test', to: ['help@in-later.test'] }, raw });
  const id = /OK: ([0-9a-f-]{36})/.exec(info.response)![1]!;

  // at the 250: the row (its From and Subject read from the header) and the event, without its content
  expect(await db().mxMessage.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'delivered', fromAddress: 'ann@plain.test', subject: 'Re: Drücker' });
  const [stored] = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'inbound.received' } });
  expect(stored!.data).toEqual({ id, pending: true });

  // the first endpoint refuses the first attempt; the retry comes after the second endpoint got its POST
  first.answers.push(500);
  worker.start();
  await waitFor(() => first.accepted('inbound.received').length === 1 && second.accepted('inbound.received').length === 1, { timeout: 30_000, what: 'the deliveries' });
  const posts = [...first.deliveries, ...second.deliveries];
  expect(posts).toHaveLength(3);
  expect(new Set(posts.map((p) => p.body)).size).toBe(1);
  expect(new Set(posts.map((p) => p.id))).toEqual(new Set([stored!.id]));
  expect(posts[0]!.data).toMatchObject({
    id,
    from: 'ann@plain.test',
    subject: 'Re: Drücker',
    reply_text: 'Still jammed.',
    envelope: { from: 'ann@plain.test', to: ['help@in-later.test'] },
    attachments: [{ filename: 'jam.bin', content_type: 'application/octet-stream', size: 2000, url: expect.stringMatching(new RegExp(`/inbound/mx/${id}/1\\?`)) }],
    raw_url: expect.stringMatching(new RegExp(`/inbound/mx/${id}/raw\\?`)),
  });
  expect(posts[0]!.data.text).toContain('Open the tray.');
  // kept in the event: what was posted is what the outbox holds
  expect((await db().event.findUniqueOrThrow({ where: { id: stored!.id } })).data).toEqual(posts[0]!.data);
}, 60_000);
