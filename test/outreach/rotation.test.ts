import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { db } from '../../apps/core/src/db';
import { startInboundReader, type InboundReader } from '../../apps/core/src/inbound/reader';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { claimDueSteps } from '../../apps/core/src/outreach/scheduler';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { as, asAdmin, useApi } from '../helpers/api';
import { Dovecot } from '../helpers/dovecot';
import { makeAccount, makeKey, makeMailbox } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { hook, useDispatcher } from '../webhooks/support';
import { Receiver } from '../webhooks/receiver';
import { addProspect, deliver, stepMessage } from './support';

/**
 * Mailbox rotation end to end (docs/campaigns.md) with a real dovecot, a real SMTP sink and a real webhook receiver:
 * first steps in turn over the mailboxes with a free slot, follow-ups from each prospect's first mailbox and threaded,
 * and a reply read on one mailbox stopping only its prospect and arriving as one signed message.received.
 */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ queues: ['webhook'], delivery: worker });
useDispatcher();
const dove = new Dovecot();
const receiver = new Receiver();
const PASS = 'rotation-pass';
let reader: InboundReader | undefined;

beforeAll(async () => {
  await dove.start({ 'a@rotation.test': PASS, 'b@rotation.test': PASS, 'c@rotation.test': PASS });
  await receiver.start();
}, 60_000);
afterAll(async () => {
  await reader?.stop();
  await receiver.stop();
  await dove.stop();
});

const STEPS = [
  { subject: 'Hello {{name}}', body: 'Hi {{name}}, a question.', delay_hours: 0 },
  { subject: 'Hello {{name}}', body: 'Any news, {{name}}?', delay_hours: 1 },
];

function reply(from: string, to: string, inReplyTo: string, text: string): string {
  return [
    `From: ${from}`,
    `To: ${to}`,
    'Subject: Re: Hello',
    `Message-ID: <${Math.random().toString(36).slice(2)}@prospect.test>`,
    `In-Reply-To: ${inReplyTo}`,
    `References: ${inReplyTo}`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="XX"',
    '',
    '--XX',
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    '--XX',
    'Content-Type: application/pdf; name="offer.pdf"',
    'Content-Disposition: attachment; filename="offer.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 our offer').toString('base64'),
    '--XX--',
    '',
  ].join('\r\n');
}

it('4 prospects over A and B (daily_limit 2): 2 first steps each, follow-ups from the first mailbox threaded, a reply on B stops only its prospect and arrives as one signed message.received', async () => {
  const account = await makeAccount();
  const a = await makeMailbox(account.id, { smtp: sink.url, address: 'a@rotation.test', daily_limit: 2, gap_seconds: 0 });
  const b = await makeMailbox(account.id, { smtp: sink.url, address: 'b@rotation.test', daily_limit: 2, gap_seconds: 0 });
  await updateMailbox(db(), a.id, { imap: dove.url('a@rotation.test', PASS) });
  await updateMailbox(db(), b.id, { imap: dove.url('b@rotation.test', PASS) });
  const h = await hook(ctx.api, account.id, receiver, ['message.received', 'prospect.replied']);

  const created = await asAdmin(ctx.api)
    .post('/admin/api/campaigns')
    .send({ account: account.id, name: 'rotation', goal: 'sales', mailboxes: [a.id, b.id], status: 'running', steps: STEPS });
  expect(created.status).toBe(201);
  expect(created.body.campaign).toMatchObject({ mailbox: a.id, mailboxes: [a.id, b.id], retired_mailboxes: [] });
  const campaign = created.body.campaign.id as number;

  const prospects: number[] = [];
  for (let i = 1; i <= 4; i++) prospects.push(await addProspect(account.id, campaign, { email: `p${i}@prospect.test`, name: `P${i}` }));

  // one claim takes all four: the rotation's free slots are A's 2 and B's 2
  const claimed = await claimDueSteps(db(), { campaignId: campaign });
  expect(claimed.map((d) => d.prospectId).sort()).toEqual([...prospects].sort());
  for (const id of prospects) expect((await runSequenceStep(db(), id, 1)).kind).toBe('written');

  const first = new Map<number, { mailboxId: number; messageIdHeader: string; id: string }>();
  for (const id of prospects) first.set(id, (await stepMessage(id, 1))!);
  const byMailbox = (mailboxId: number) => prospects.filter((id) => first.get(id)!.mailboxId === mailboxId);
  expect(byMailbox(a.id)).toHaveLength(2);
  expect(byMailbox(b.id)).toHaveLength(2);
  // in turn: A, B, A, B
  expect(prospects.map((id) => first.get(id)!.mailboxId)).toEqual([a.id, b.id, a.id, b.id]);
  for (const id of prospects) await deliver(worker.delivery, first.get(id)!.id);
  await sink.waitForCount(4);
  const fromOnWire = (to: string) => sink.messages.filter((m) => m.envelope.to.includes(to)).map((m) => m.parsed.from?.value[0]?.address);
  for (const id of prospects) {
    const p = await db().prospect.findUniqueOrThrow({ where: { id } });
    expect(p.mailboxId).toBe(first.get(id)!.mailboxId);
    expect(fromOnWire(p.email!)).toEqual([first.get(id)!.mailboxId === a.id ? 'a@rotation.test' : 'b@rotation.test']);
  }

  // the prospect of B that answers: its reply, with an attachment, lands in B's INBOX
  const [answering, quiet] = byMailbox(b.id) as [number, number];
  reader = startInboundReader(db(), { refreshMs: 200 });
  await dove.append('b@rotation.test', PASS, reply(`P <p${prospects.indexOf(answering) + 1}@prospect.test>`, 'b@rotation.test', first.get(answering)!.messageIdHeader, 'Yes, tell me more.'));
  await waitFor(async () => (await db().prospect.findUniqueOrThrow({ where: { id: answering } })).status === 'replied', { timeout: 30_000, what: 'the reply to be read on B' });

  // follow-ups: due now; both mailboxes used their 2 of today, so each waits for ITS mailbox (it never moves over)
  await db().prospect.updateMany({ where: { id: { in: prospects } , status: 'writing' }, data: { nextAt: new Date(Date.now() - 1000) } });
  const waiting = await runSequenceStep(db(), quiet, 2);
  expect(waiting).toMatchObject({ kind: 'deferred', why: 'daily_limit' });
  expect(await stepMessage(quiet, 2)).toBeNull();
  // room again tomorrow, here now: the follow-ups go out, each from its prospect's first mailbox, threaded
  await updateMailbox(db(), a.id, { daily_limit: 4 });
  await updateMailbox(db(), b.id, { daily_limit: 4 });
  await db().prospect.updateMany({ where: { id: { in: prospects }, status: 'writing' }, data: { nextAt: new Date(Date.now() - 1000) } });
  for (const id of prospects) await runSequenceStep(db(), id, 2);
  expect(await stepMessage(answering, 2)).toBeNull();
  const followUps = prospects.filter((id) => id !== answering);
  for (const id of followUps) {
    const second = (await stepMessage(id, 2))!;
    expect(second.mailboxId).toBe(first.get(id)!.mailboxId);
    expect(second.inReplyTo).toBe(first.get(id)!.messageIdHeader);
    await deliver(worker.delivery, second.id);
  }
  await sink.waitForCount(7);
  for (const id of followUps) {
    const p = await db().prospect.findUniqueOrThrow({ where: { id } });
    const wire = sink.messages.filter((m) => m.envelope.to.includes(p.email!));
    expect(wire).toHaveLength(2);
    expect(wire[1]!.parsed.inReplyTo).toBe(first.get(id)!.messageIdHeader);
    expect(wire[1]!.parsed.from?.value[0]?.address).toBe(wire[0]!.parsed.from?.value[0]?.address);
  }
  // the reply stopped only its prospect
  expect((await db().prospect.findMany({ where: { id: { in: prospects } }, orderBy: { id: 'asc' } })).map((p) => [p.id, p.status])).toEqual(
    prospects.map((id) => [id, id === answering ? 'replied' : 'writing']),
  );

  // one message.received, signed the Standard Webhooks way, with the text and the attachment
  const received = await waitFor(() => (receiver.accepted('message.received').length ? receiver.accepted('message.received') : undefined), { timeout: 20_000, what: 'message.received' });
  await new Promise((r) => setTimeout(r, 500));
  expect(receiver.accepted('message.received')).toHaveLength(1);
  const event = received[0]!;
  const verified = new Webhook(h.secret).verify(event.body, { 'webhook-id': event.id, 'webhook-timestamp': event.timestamp, 'webhook-signature': event.signature }) as { type: string; data: Record<string, unknown> };
  expect(verified.type).toBe('message.received');
  expect(verified.data).toMatchObject({
    mailbox: b.id,
    from: `p${prospects.indexOf(answering) + 1}@prospect.test`,
    to: 'b@rotation.test',
    subject: 'Re: Hello',
    in_reply_to: { message: first.get(answering)!.id, prospect: answering, campaign },
    attachments: [{ filename: 'offer.pdf', content_type: 'application/pdf', size: 18, url: expect.any(String) }],
  });
  expect(String(verified.data.text)).toContain('Yes, tell me more.');
  // the attachment through its signed URL; an altered signature is refused
  const url = new URL((verified.data.attachments as { url: string }[])[0]!.url);
  const file = await request(ctx.api.app).get(url.pathname + url.search);
  expect(file.status).toBe(200);
  expect(Buffer.from(file.body as Buffer).toString()).toBe('%PDF-1.4 our offer');
  expect((await request(ctx.api.app).get(url.pathname + url.search.replace(/signature=(.)/, (_, c: string) => `signature=${c === 'x' ? 'y' : 'x'}`))).status).toBe(404);

  // readable by a key too
  const { token } = await makeKey(account.id, a.id);
  const page = await as(ctx.api, token).get('/api/v1/inbound?after=0');
  expect(page.status).toBe(200);
  expect(page.body.messages).toEqual([expect.objectContaining({ id: verified.data.id, text: expect.stringContaining('Yes, tell me more.'), in_reply_to: expect.objectContaining({ prospect: answering }) })]);

  // campaign stats: sends per mailbox
  const stats = await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign}/stats`);
  expect(stats.body.stats.mailboxes).toEqual([
    { mailbox: a.id, address: 'a@rotation.test', sent: 4, prospects: 2 },
    { mailbox: b.id, address: 'b@rotation.test', sent: 3, prospects: 2 },
  ]);
}, 120_000);
