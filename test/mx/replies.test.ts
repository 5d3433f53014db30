import nodemailer from 'nodemailer';
import { db } from '../../apps/core/src/db';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { useDelivery, useMail } from '../helpers/mail';
import { deliver, firstStepSent, stepMessage } from '../outreach/support';
import { inboundDomain, message, useMx } from './support';

/**
 * Replies that reach the MX at a route address (docs/mx.md, "Bounces, complaints and replies"): the inbound reader's
 * classifier, proof and actions, as for a reply read over IMAP (test/inbound/reader.test.ts).
 */
jest.setTimeout(60_000);

const dns = useDns(['reply-from.test'], [txt('reply-from.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ delivery: worker });
const mx = useMx(dns);
const DAY = 86_400_000;

const transport = () => nodemailer.createTransport({ host: '127.0.0.1', port: mx.port, secure: false, tls: { rejectUnauthorized: false } });
const sendRaw = async (to: string, raw: string) => (await transport().sendMail({ envelope: { from: 'ann@reply-from.test', to: [to] }, raw })).response;
const prospect = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });

/** An account whose campaign sent step 1 to the prospect, and an inbound domain of the same account with a catch-all route. */
async function sentTo(email: string, domain: string) {
  const { tenant, prospectId, first } = await firstStepSent(worker.delivery, sink.url, email);
  expect(first.status).toBe('sent');
  await inboundDomain(ctx.api, domain, [{ match: '*', action: 'webhook' }], tenant.account);
  return { tenant, prospectId, first };
}

it('a threaded reply arriving at a route address stops the sequence: the prospect is replied, the step already written is not sent, the customer still gets the message; the same reply sent again acts once', async () => {
  const s = await sentTo('ann@reply-from.test', 'sales-in.test');
  // step 2 is written (due now) and waits for delivery when the reply comes
  await db().prospect.update({ where: { id: s.prospectId }, data: { nextAt: new Date() } });
  expect((await runSequenceStep(db(), s.prospectId, 2)).kind).toBe('written');

  const date = new Date(Date.now() - 60_000);
  const reply = await message({ From: 'Ann <ann@reply-from.test>', To: 'sales@sales-in.test', Subject: 'Re: Hello Ann', 'In-Reply-To': s.first.messageIdHeader, References: s.first.messageIdHeader, Date: date.toUTCString() }, 'Yes, tell me more.\n\nOn Mon, Ann wrote:\n> Hi');
  expect(await sendRaw('sales@sales-in.test', reply)).toMatch(/^250 2\.0\.0 OK: [0-9a-f-]{36}$/);

  // acted on before the 250: nothing to wait for
  const p = await prospect(s.prospectId);
  expect(p).toMatchObject({ status: 'replied', reply: 'human', nextAt: null });
  expect(p.repliedAt!.getTime()).toBe(Math.floor(date.getTime() / 1000) * 1000);
  const [handled] = await db().inboundMessage.findMany({ where: { mailboxId: s.tenant.mailbox.id } });
  expect(handled).toMatchObject({ kind: 'reply', prospectId: s.prospectId, relatedId: s.first.id, fromAddress: 'ann@reply-from.test', uidValidity: 0n });
  expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(1);
  // the step written before the reply is cancelled, never sent
  const second = (await stepMessage(s.prospectId, 2))!;
  await deliver(worker.delivery, second.id);
  expect((await db().message.findUniqueOrThrow({ where: { id: second.id } })).status).toBe('cancelled');
  expect(sink.to('ann@reply-from.test')).toHaveLength(1);
  // the route's customer still receives it
  expect(await db().mxMessage.count({ where: { accountId: s.tenant.account.id, status: 'delivered' } })).toBe(1);

  // the same bytes again (a 250 lost on the way): the reply is not handled twice
  await sendRaw('sales@sales-in.test', reply);
  expect(await db().inboundMessage.count({ where: { mailboxId: s.tenant.mailbox.id } })).toBe(1);
  expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(1);
});

it("an out-of-office reply pauses the sequence until the day after the return date, as the IMAP reader's rules say, and does not stop it", async () => {
  const s = await sentTo('bob@reply-from.test', 'ooo-in.test');
  const back = new Date(Date.now() + 10 * DAY).toISOString().slice(0, 10);
  const ooo = await message(
    { From: 'Bob <bob@reply-from.test>', To: 'sales@ooo-in.test', Subject: 'Out of office', 'Auto-Submitted': 'auto-replied', 'In-Reply-To': s.first.messageIdHeader },
    `I am away and back on ${back}.`,
  );
  await sendRaw('sales@ooo-in.test', ooo);
  const p = await prospect(s.prospectId);
  expect(p).toMatchObject({ status: 'later', reply: 'auto', nextAt: new Date(Date.parse(`${back}T00:00:00Z`) + DAY) });
  expect(await db().inboundMessage.findFirst({ where: { mailboxId: s.tenant.mailbox.id } })).toMatchObject({ kind: 'auto_reply', prospectId: s.prospectId });
  expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(0);
});

it("mail at a route address that names no email of the account (another account's Message-ID, or none) leaves every prospect alone", async () => {
  const s = await sentTo('cat@reply-from.test', 'plain-in.test');
  const other = await sentTo('dan@reply-from.test', 'other-in.test');
  const before = await prospect(s.prospectId);
  const otherBefore = await prospect(other.prospectId);
  // In-Reply-To names the other account's email: the route's account sent nothing of that id
  await sendRaw('sales@plain-in.test', await message({ From: 'dan@reply-from.test', To: 'sales@plain-in.test', Subject: 'Re: Hello', 'In-Reply-To': other.first.messageIdHeader }, 'Hello'));
  // From: names the prospect, but no Message-ID of ours: proves nothing
  await sendRaw('sales@plain-in.test', await message({ From: 'cat@reply-from.test', To: 'sales@plain-in.test', Subject: 'Re: Hello' }, 'Hello'));
  expect(await prospect(s.prospectId)).toMatchObject({ status: before.status, reply: before.reply, nextAt: before.nextAt });
  expect(await prospect(other.prospectId)).toMatchObject({ status: otherBefore.status, reply: otherBefore.reply, nextAt: otherBefore.nextAt });
  expect(await db().inboundMessage.count({ where: { mailboxId: { in: [s.tenant.mailbox.id, other.tenant.mailbox.id] } } })).toBe(0);
  expect(await db().mxMessage.count({ where: { accountId: s.tenant.account.id } })).toBe(2);
});
