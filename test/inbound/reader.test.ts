import fs from 'node:fs';
import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { checkImap } from '../../apps/core/src/mailboxes/check';
import { startInboundReader, type InboundReader } from '../../apps/core/src/inbound/reader';
import { readReport } from '../../apps/core/src/inbound/bounces';
import { metrics } from '../../apps/core/src/metrics';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { updateMailbox } from '../../apps/core/src/mailboxes';
import { addSubscriberByKey } from '../../apps/core/src/subscribers/machine';
import { as, asAdmin, useApi } from '../helpers/api';
import { Dovecot } from '../helpers/dovecot';
import { makeList, wantEvents } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addProspect, deliver, outreach, stepMessage } from '../outreach/support';

/** The IMAP reader against a real dovecot: each test has its own IMAP user (= the INBOX of one mailbox). */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ delivery: worker });
const dove = new Dovecot();
const PASS = 'secret-pass';
const USERS = Array.from({ length: 20 }, (_, i) => `box${i}@imap.test`);
let nextUser = 0;
let readers: InboundReader[] = [];
const DAY = 86_400_000;

beforeAll(async () => {
  await dove.start(Object.fromEntries(USERS.map((u) => [u, PASS])));
  readers = [startInboundReader(db(), { refreshMs: 200 })];
}, 60_000);
afterAll(async () => {
  await Promise.all(readers.map((r) => r.stop()));
  await dove.stop();
});

/** An account whose campaign has sent step 1 to `email`; its mailbox reads a fresh IMAP user from now on. */
async function sentTo(email: string) {
  const user = USERS[nextUser++]!;
  const { tenant, campaign } = await outreach({
    smtp: sink.url,
    steps: [
      { subject: 'Hello {{name}}', body: 'Hi', delay_hours: 0 },
      { subject: 'Hello {{name}}', body: 'Any news?', delay_hours: 48 },
    ],
  });
  await wantEvents(tenant.account.id);
  const prospectId = await addProspect(tenant.account.id, campaign.id, { email, name: 'Ann' });
  expect((await runSequenceStep(db(), prospectId, 1)).kind).toBe('written');
  const first = (await stepMessage(prospectId, 1))!;
  await deliver(worker.delivery, first.id);
  await updateMailbox(db(), tenant.mailbox.id, { imap: dove.url(user, PASS) });
  return { tenant, campaign, prospectId, first: (await stepMessage(prospectId, 1))!, user, mailboxId: tenant.mailbox.id };
}

const handled = (mailboxId: number, count = 1) =>
  waitFor(async () => {
    const rows = await db().inboundMessage.findMany({ where: { mailboxId }, orderBy: { id: 'asc' } });
    return rows.length >= count ? rows : null;
  }, { timeout: 20_000, what: `${count} inbound message(s) of mailbox ${mailboxId}` });

const prospect = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });

const inboundCount = async (kind: string) => (await metrics.inboundMessages.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;

function mail(headers: Record<string, string>, body: string): string {
  const all = { Date: new Date().toUTCString(), 'Message-ID': `<${Math.random().toString(36).slice(2)}@sender.test>`, ...headers };
  return `${Object.entries(all).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body.replace(/\n/g, '\r\n')}\r\n`;
}

/**
 * A delivery report (RFC 3464) from MAILER-DAEMON of `domain` about `recipient`; `original`: the original's headers
 * attached (text/rfc822-headers), or nothing of the original.
 */
function deliveryReport(r: { to: string; domain: string; mta: string; recipient: string; action: string; status: string; original?: string }): string {
  const original = r.original === undefined ? '' : `\n--B\nContent-Type: text/rfc822-headers\n\n${r.original}\n`;
  return mail(
    { From: `MAILER-DAEMON@${r.domain}`, To: r.to, Subject: 'Undelivered Mail Returned to Sender', 'MIME-Version': '1.0', 'Content-Type': 'multipart/report; report-type=delivery-status; boundary="B"' },
    `--B
Content-Type: text/plain

Your message could not be delivered.

--B
Content-Type: message/delivery-status

Reporting-MTA: dns; ${r.mta}

Final-Recipient: rfc822; ${r.recipient}
Action: ${r.action}
Status: ${r.status}
Diagnostic-Code: smtp; 550 ${r.status} <${r.recipient}>: Recipient address rejected: User unknown
${original}
--B--`,
  );
}

/** A mail server's report about a message this mailbox sent (the original's headers attached). */
function dsn(to: string, from: string, recipient: string, action: string, status: string, originalId: string): string {
  const original = `From: ${to}\nTo: ${recipient}\nSubject: Hello Ann\nMessage-ID: ${originalId}`;
  return deliveryReport({ to, domain: from.split('@')[1]!, mta: 'mx.example.org', recipient, action, status, original });
}

/** A delivery report from a stranger that names a recipient and nothing of the original (or a made-up original). */
function strangerDsn(to: string, recipient: string, originalId?: string): string {
  const original = originalId ? `To: ${recipient}\nSubject: Hello\nMessage-ID: ${originalId}` : undefined;
  return deliveryReport({ to, domain: 'stranger.test', mta: 'mx.stranger.test', recipient, action: 'failed', status: '5.1.1', original });
}

/** A feedback report (ARF) about `recipient`; with `original`, the original's headers attached. */
function arfReport(to: string, recipient: string, original = ''): string {
  return mail(
    { From: 'abuse@isp.test', To: to, Subject: 'Complaint', 'MIME-Version': '1.0', 'Content-Type': 'multipart/report; report-type=feedback-report; boundary="F"' },
    `--F
Content-Type: text/plain

This is an email abuse report.

--F
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: test/1.0
Version: 1
Original-Rcpt-To: ${recipient}
${original ? `\n--F\nContent-Type: message/rfc822\n\n${original}\n\nHi` : ''}
--F--`,
  );
}

describe('inbound mail over IMAP (dovecot)', () => {
  it('a threaded human reply stops the sequence: the step already written is not sent, the prospect is replied', async () => {
    const s = await sentTo('ann@reply.test');
    const replies = await inboundCount('reply');
    // step 2 is written (due now) and waits for delivery when the reply comes
    await db().prospect.update({ where: { id: s.prospectId }, data: { nextAt: new Date() } });
    expect((await runSequenceStep(db(), s.prospectId, 2)).kind).toBe('written');
    const date = new Date(Date.now() - 60_000);
    await dove.append(s.user, PASS, mail({ From: 'Ann <Ann@reply.test>', To: s.tenant.mailbox.address, Subject: 'Re: Hello Ann', 'In-Reply-To': s.first.messageIdHeader, References: s.first.messageIdHeader, Date: date.toUTCString() }, 'Yes, tell me more.'));
    const [row] = await handled(s.mailboxId);
    expect(row).toMatchObject({ kind: 'reply', prospectId: s.prospectId, fromAddress: 'ann@reply.test' });
    // mailservice_inbound_messages_total{kind="reply"}
    await waitFor(async () => ((await inboundCount('reply')) === replies + 1 ? true : undefined), { what: 'the inbound counter' });
    const p = await prospect(s.prospectId);
    expect(p).toMatchObject({ status: 'replied', reply: 'human', nextAt: null });
    expect(p.repliedAt!.getTime()).toBe(Math.floor(date.getTime() / 1000) * 1000);
    const second = (await stepMessage(s.prospectId, 2))!;
    await deliver(worker.delivery, second.id);
    expect((await db().message.findUniqueOrThrow({ where: { id: second.id } })).status).toBe('cancelled');
    expect(sink.to('ann@reply.test')).toHaveLength(1);
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(1);

    // the owner's mail is untouched: still there, not marked \Seen
    const client = dove.client(s.user, PASS);
    await client.connect();
    await client.mailboxOpen('INBOX', { readOnly: true });
    const flags = [];
    for await (const m of client.fetch('1:*', { flags: true })) flags.push([...(m.flags ?? [])].filter((f) => f !== '\\Recent'));
    await client.logout();
    expect(flags).toEqual([[]]);

    const listed = await asAdmin(ctx.api).get(`/admin/api/inbound?mailbox=${s.mailboxId}&limit=10`);
    expect(listed.status).toBe(200);
    expect(listed.body.messages).toEqual([expect.objectContaining({ mailbox: s.mailboxId, kind: 'reply', prospect_id: s.prospectId, from: 'ann@reply.test', subject: 'Re: Hello Ann' })]);
  });

  it("mail that only says it is from the prospect (no Message-ID of ours, no VERP address) is no reply: the sequence goes on", async () => {
    const s = await sentTo('bob@reply.test');
    const before = await prospect(s.prospectId);
    await dove.append(s.user, PASS, mail({ From: 'bob@reply.test', To: s.tenant.mailbox.address, Subject: 'Re: Hello Ann', 'In-Reply-To': '<made-up@elsewhere.test>' }, 'Stop writing.'));
    await dove.append(s.user, PASS, mail({ From: 'bob@reply.test', To: s.tenant.mailbox.address, Subject: 'Out of office', 'Auto-Submitted': 'auto-replied' }, 'Away until 2099-01-01.'));
    const rows = await handled(s.mailboxId, 2);
    expect(rows.map((r) => ({ kind: r.kind, prospectId: r.prospectId }))).toEqual([{ kind: 'other', prospectId: null }, { kind: 'other', prospectId: null }]);
    expect(await prospect(s.prospectId)).toMatchObject({ status: before.status, reply: before.reply, nextAt: before.nextAt });
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(0);
    // the same words threaded to our email are a reply
    await dove.append(s.user, PASS, mail({ From: 'bob@reply.test', To: s.tenant.mailbox.address, Subject: 'Re: Hello Ann', References: `<x@y.test> ${s.first.messageIdHeader}` }, 'Call me.'));
    expect((await handled(s.mailboxId, 3))[2]).toMatchObject({ kind: 'reply', prospectId: s.prospectId });
    expect(await prospect(s.prospectId)).toMatchObject({ status: 'replied', reply: 'human', nextAt: null });
    expect(await runSequenceStep(db(), s.prospectId, 2)).toEqual({ kind: 'skipped', why: 'prospect is replied' });
  });

  it('an out-of-office with a return date postpones to the day after it; one without to 7 days; then the sequence goes on', async () => {
    const a = await sentTo('cat@ooo.test');
    const back = new Date(Date.now() + 10 * DAY);
    const iso = back.toISOString().slice(0, 10);
    await dove.append(a.user, PASS, mail({ From: 'cat@ooo.test', To: a.tenant.mailbox.address, Subject: 'Out of office', 'Auto-Submitted': 'auto-replied', 'In-Reply-To': a.first.messageIdHeader }, `I am away and back on ${iso}.`));
    expect((await handled(a.mailboxId))[0]).toMatchObject({ kind: 'auto_reply', prospectId: a.prospectId });
    expect(await prospect(a.prospectId)).toMatchObject({ status: 'later', reply: 'auto', nextAt: new Date(`${iso}T00:00:00Z`.replace(iso, new Date(Date.parse(iso) + DAY).toISOString().slice(0, 10))) });

    const b = await sentTo('dan@ooo.test');
    // step 2 is written and waiting for delivery when the out-of-office comes
    await db().prospect.update({ where: { id: b.prospectId }, data: { nextAt: new Date() } });
    expect((await runSequenceStep(db(), b.prospectId, 2)).kind).toBe('written');
    const sentAt = new Date();
    await dove.append(b.user, PASS, mail({ From: 'dan@ooo.test', To: b.tenant.mailbox.address, Subject: 'Abwesenheitsnotiz: Hello Ann', Date: sentAt.toUTCString(), References: b.first.messageIdHeader }, 'Ich bin nicht im Büro.'));
    expect((await handled(b.mailboxId))[0]).toMatchObject({ kind: 'auto_reply' });
    const later = await prospect(b.prospectId);
    expect(later).toMatchObject({ status: 'later', reply: 'auto' });
    expect(later.nextAt!.getTime()).toBe(Math.floor(sentAt.getTime() / 1000) * 1000 + 7 * DAY);

    // the step written before is not sent now, and not skipped: the prospect goes back to step 1
    const pending = (await stepMessage(b.prospectId, 2))!;
    await deliver(worker.delivery, pending.id);
    expect((await db().message.findUniqueOrThrow({ where: { id: pending.id } })).status).toBe('cancelled');
    expect(await prospect(b.prospectId)).toMatchObject({ status: 'later', step: 1 });
    // at next_at the sequence goes on with step 2
    await db().prospect.update({ where: { id: b.prospectId }, data: { nextAt: new Date() } });
    expect((await runSequenceStep(db(), b.prospectId, 2)).kind).toBe('written');
    expect(await prospect(b.prospectId)).toMatchObject({ status: 'writing', step: 2 });
    await deliver(worker.delivery, (await stepMessage(b.prospectId, 2))!.id);
    expect(sink.to('dan@ooo.test')).toHaveLength(2);
  });

  it('a DSN 5.1.1 marks the message bounced and suppresses the address; a 4.x.x DSN changes nothing', async () => {
    const soft = await sentTo('eve@bounce.test');
    await dove.append(soft.user, PASS, dsn(soft.tenant.mailbox.address, 'x@mx.example.org', 'eve@bounce.test', 'delayed', '4.4.1', soft.first.messageIdHeader));
    expect((await handled(soft.mailboxId))[0]).toMatchObject({ kind: 'bounce', prospectId: soft.prospectId });
    expect((await db().message.findUniqueOrThrow({ where: { id: soft.first.id } })).status).toBe('sent');
    expect(await prospect(soft.prospectId)).toMatchObject({ status: 'writing' });
    expect(await db().suppression.count({ where: { accountId: soft.tenant.account.id } })).toBe(0);

    const s = await sentTo('fay@bounce.test');
    await dove.append(s.user, PASS, dsn(s.tenant.mailbox.address, 'x@mx.example.org', 'fay@bounce.test', 'failed', '5.1.1', s.first.messageIdHeader));
    expect((await handled(s.mailboxId))[0]).toMatchObject({ kind: 'bounce', prospectId: s.prospectId });
    const bounced = await db().message.findUniqueOrThrow({ where: { id: s.first.id } });
    expect(bounced.status).toBe('bounced');
    expect(bounced.lastError).toContain('User unknown');
    expect(await db().suppression.findFirst({ where: { accountId: s.tenant.account.id, email: 'fay@bounce.test' } })).toMatchObject({ reason: 'bounced' });
    expect(await prospect(s.prospectId)).toMatchObject({ status: 'lost', reason: 'bounced', reply: 'bounce' });
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'message.bounced' } })).toBe(1);

    const sent = await as(ctx.api, s.tenant.token).post('/api/v1/send').send({ to: ['fay@bounce.test', 'ok@bounce.test'], subject: 'Hi', text: 'x' });
    expect(sent.status).toBe(202);
    expect(sent.body.skipped).toEqual([{ to: 'fay@bounce.test', reason: 'bounced' }]);
    const list = await makeList(s.tenant.account.id, s.mailboxId, { confirm: false });
    expect(await addSubscriberByKey(db(), ctx.api.state.adds, s.tenant.account.id, list.key, { email: 'fay@bounce.test' })).toBe('suppressed');
  });

  it('real reports (sisimai corpus: Exim, qmail) act by their reason: a dead address is suppressed, a blocked one is not', async () => {
    // each report carries our original's Message-ID in place of sisimai's, as a real server's report of our email does
    const corpus = (name: string, ours: string) => {
      const raw = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'sisimai', 'bsd', name), 'latin1');
      const theirs = readReport(raw)!.originalId!;
      return raw.split(theirs).join(ours);
    };
    const dead = await sentTo('kijitora@neko.example.co.jp');
    await dove.append(dead.user, PASS, corpus('lhost-exim-05.eml', dead.first.messageIdHeader));
    expect((await handled(dead.mailboxId))[0]).toMatchObject({ kind: 'bounce', reason: 'userunknown', prospectId: dead.prospectId });
    const bounced = await db().message.findUniqueOrThrow({ where: { id: dead.first.id } });
    expect(bounced).toMatchObject({ status: 'bounced', bounce: expect.objectContaining({ reason: 'userunknown', class: 'dead', status: '5.1.1', smtp_code: '553', dead: true }) });
    expect(await db().suppression.findFirst({ where: { accountId: dead.tenant.account.id, email: 'kijitora@neko.example.co.jp' } })).toMatchObject({ reason: 'bounced', bounceReason: 'userunknown' });
    expect(await prospect(dead.prospectId)).toMatchObject({ status: 'lost', reason: 'bounced' });
    const event = await db().event.findFirstOrThrow({ where: { accountId: dead.tenant.account.id, type: 'message.bounced' } });
    expect(event.data).toMatchObject({ id: dead.first.id, bounce: { reason: 'userunknown', class: 'dead', status: '5.1.1', smtp_code: '553', dead: true } });

    const qmail = await sentTo('kijitora@example.ne.jp');
    await dove.append(qmail.user, PASS, corpus('lhost-qmail-01.eml', qmail.first.messageIdHeader));
    expect((await handled(qmail.mailboxId))[0]).toMatchObject({ kind: 'bounce', reason: 'userunknown' });
    expect(await db().suppression.count({ where: { accountId: qmail.tenant.account.id, email: 'kijitora@example.ne.jp' } })).toBe(1);

    const blocked = await sentTo('kijitora@example.ed.jp');
    await dove.append(blocked.user, PASS, corpus('lhost-exim-01.eml', blocked.first.messageIdHeader));
    expect((await handled(blocked.mailboxId))[0]).toMatchObject({ kind: 'bounce', reason: 'blocked' });
    expect((await db().message.findUniqueOrThrow({ where: { id: blocked.first.id } })).bounce).toMatchObject({ reason: 'blocked', class: 'not_address', dead: false });
    expect(await db().suppression.count({ where: { accountId: blocked.tenant.account.id } })).toBe(0);
    expect(await prospect(blocked.prospectId)).toMatchObject({ status: 'writing' });
    const listed = await asAdmin(ctx.api).get(`/admin/api/inbound?mailbox=${blocked.mailboxId}&limit=10`);
    expect(listed.body.messages).toEqual([expect.objectContaining({ kind: 'bounce', reason: 'blocked' })]);
    const bounces = (await metrics.bounces.get()).values;
    expect(bounces.find((v) => v.labels.class === 'not_address' && v.labels.reason === 'blocked')?.value).toBeGreaterThanOrEqual(1);
  });

  it('VERP: the envelope sender names the message, and mail of an unknown format at that address is its bounce', async () => {
    const user = USERS[nextUser++]!;
    const { tenant } = await outreach({ smtp: sink.url, steps: [{ subject: 'Hi', body: 'Hi', delay_hours: 0 }] });
    await updateMailbox(db(), tenant.mailbox.id, { return_path: 'verp' });
    const sent = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'hal@verp.test', subject: 'Hi', text: 'x' });
    await deliver(worker.delivery, sent.body.messages[0].id);
    const [local, domain] = tenant.mailbox.address.split('@');
    const envelope = sink.to('hal@verp.test')[0]!.envelope.from;
    expect(envelope).toMatch(new RegExp(`^${local}\\+b-[a-z2-7]{34}@${domain}$`));
    await updateMailbox(db(), tenant.mailbox.id, { imap: dove.url(user, PASS) });
    // no DSN, no known wording: only the address it came back to says what it is
    await dove.append(
      user,
      PASS,
      mail({ From: 'robot@gateway.test', To: envelope, 'Delivered-To': envelope, Subject: 'Notice' }, 'We could not hand your note over.\nReason: 5.1.1 user unknown\n'),
    );
    expect((await handled(tenant.mailbox.id))[0]).toMatchObject({ kind: 'bounce', reason: 'userunknown', relatedId: sent.body.messages[0].id });
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'hal@verp.test' } })).toMatchObject({ bounceReason: 'userunknown' });
    const view = await as(ctx.api, tenant.token).get(`/api/v1/send/${sent.body.id}`);
    expect(view.body.messages[0]).toMatchObject({ status: 'bounced', bounce: { reason: 'userunknown', class: 'dead', dead: true } });
    // a token that is not ours names nothing
    const forged = envelope.replace(/\+b-[a-z2-7]{4}/, '+b-aaaa');
    await dove.append(user, PASS, mail({ From: 'robot@gateway.test', To: forged, Subject: 'Notice' }, 'Reason: 5.1.1 user unknown'));
    expect((await handled(tenant.mailbox.id, 2))[1]).toMatchObject({ kind: 'other', relatedId: null });
  });

  it('forged reports (a stranger, no original of ours) change nothing and are listed as unmatched; a DSN naming our Message-ID acts', async () => {
    const user = USERS[nextUser++]!;
    const { tenant } = await outreach({ smtp: sink.url, steps: [{ subject: 'Hi', body: 'Hi', delay_hours: 0 }] });
    const to = ['ana@forged.test', 'ben@forged.test', 'cy@forged.test', 'dee@forged.test', 'eli@forged.test'];
    const sent = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 'Hi', text: 'x' });
    for (const m of sent.body.messages) await deliver(worker.delivery, m.id);
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    expect(await addSubscriberByKey(db(), ctx.api.state.adds, tenant.account.id, list.key, { email: 'ana@forged.test' })).toBe('active');
    await updateMailbox(db(), tenant.mailbox.id, { imap: dove.url(user, PASS) });
    const unmatchedBefore = (await metrics.inboundUnmatched.get()).values.find((v) => v.labels.kind === 'bounce')?.value ?? 0;

    // four DSNs from a stranger: three name only the recipient, one a Message-ID that is not ours; a complaint likewise
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'ana@forged.test'));
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'ben@forged.test'));
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'cy@forged.test'));
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'dee@forged.test', '<made-up-1@stranger.test>'));
    await dove.append(user, PASS, arfReport(tenant.mailbox.address, 'eli@forged.test'));
    // our Message-ID, but the message went to someone else than the address the report says failed
    const anaId = (await db().message.findFirstOrThrow({ where: { sendId: sent.body.id, to: 'ana@forged.test' } })).messageIdHeader;
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'ben@forged.test', anaId));
    const rows = await handled(tenant.mailbox.id, 6);
    expect(rows.map((r) => [r.kind, r.relatedId, r.prospectId])).toEqual([...Array(4).fill(['bounce', null, null]), ['complaint', null, null], ['bounce', null, null]]);
    expect(rows.map((r) => r.unmatched)).toEqual([
      'names no Message-ID of ours', 'names no Message-ID of ours', 'names no Message-ID of ours', 'names no Message-ID of ours',
      'names no Message-ID of ours', 'the message it names went to another address',
    ]);
    expect(await db().suppression.count({ where: { accountId: tenant.account.id } })).toBe(0);
    expect(await db().stopEntry.count({ where: { accountId: tenant.account.id } })).toBe(0);
    expect(await db().message.findMany({ where: { sendId: sent.body.id }, select: { status: true, bounce: true } })).toEqual(Array(5).fill({ status: 'sent', bounce: null }));
    expect(await db().subscriber.findFirstOrThrow({ where: { listId: list.id, email: 'ana@forged.test' } })).toMatchObject({ status: 'active' });
    expect(await db().event.count({ where: { accountId: tenant.account.id, type: { in: ['message.bounced', 'message.complained'] } } })).toBe(0);
    expect((await metrics.inboundUnmatched.get()).values.find((v) => v.labels.kind === 'bounce')?.value).toBe(unmatchedBefore + 5);

    // shown in the admin API (all, or only the unmatched); the console's Inbound page: test/console/console.test.ts
    const listed = await asAdmin(ctx.api).get(`/admin/api/inbound?mailbox=${tenant.mailbox.id}&unmatched=true`);
    expect(listed.status).toBe(200);
    expect(listed.body.messages).toHaveLength(6);
    expect(listed.body.messages[0]).toMatchObject({ kind: 'bounce', unmatched: 'the message it names went to another address', reason: 'userunknown' });

    // the real server's DSN carries our original's headers: it acts
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'ana@forged.test', anaId));
    const genuine = (await handled(tenant.mailbox.id, 7))[6]!;
    expect(genuine).toMatchObject({ kind: 'bounce', unmatched: null, reason: 'userunknown' });
    expect(await db().suppression.findMany({ where: { accountId: tenant.account.id }, select: { email: true } })).toEqual([{ email: 'ana@forged.test' }]);
    expect(await db().subscriber.findFirstOrThrow({ where: { listId: list.id, email: 'ana@forged.test' } })).toMatchObject({ status: 'bounced' });
    expect((await asAdmin(ctx.api).get(`/admin/api/inbound?mailbox=${tenant.mailbox.id}&unmatched=false`)).body.messages).toEqual([expect.objectContaining({ id: genuine.id, unmatched: null })]);
  });

  it('VERP mailbox: reports to the plain address or to a made-up token change nothing; a complaint whose original has our VERP Return-Path acts', async () => {
    const user = USERS[nextUser++]!;
    const { tenant } = await outreach({ smtp: sink.url, steps: [{ subject: 'Hi', body: 'Hi', delay_hours: 0 }] });
    await updateMailbox(db(), tenant.mailbox.id, { return_path: 'verp', imap: dove.url(user, PASS) });
    const sent = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: ['ivo@verp-forged.test', 'jo@verp-forged.test'], subject: 'Hi', text: 'x' });
    for (const m of sent.body.messages) await deliver(worker.delivery, m.id);
    const messages = await db().message.findMany({ where: { sendId: sent.body.id } });
    const ivo = messages.find((m) => m.to === 'ivo@verp-forged.test')!;
    const jo = messages.find((m) => m.to === 'jo@verp-forged.test')!;
    const envelope = sink.to('ivo@verp-forged.test')[0]!.envelope.from as string;
    const [local, domain] = tenant.mailbox.address.split('@');
    const madeUp = `${local}+b-${'a'.repeat(34)}@${domain}`;

    // to the plain address, even naming our Message-ID; to a made-up token; a complaint naming only our Message-ID
    await dove.append(user, PASS, strangerDsn(tenant.mailbox.address, 'ivo@verp-forged.test', ivo.messageIdHeader));
    await dove.append(user, PASS, strangerDsn(madeUp, 'ivo@verp-forged.test').replace(/\r\nTo: [^\r]*/, `\r\nTo: ${madeUp}\r\nDelivered-To: ${madeUp}`));
    await dove.append(user, PASS, arfReport(tenant.mailbox.address, 'jo@verp-forged.test', `From: ${tenant.mailbox.address}\nTo: jo@verp-forged.test\nMessage-ID: ${jo.messageIdHeader}\nSubject: Hi`));
    const rows = await handled(tenant.mailbox.id, 3);
    expect(rows.map((r) => [r.kind, r.relatedId, r.unmatched])).toEqual([
      ['bounce', null, 'the mailbox uses VERP and the report did not come to a valid VERP address of ours'],
      ['bounce', null, 'the mailbox uses VERP and the report did not come to a valid VERP address of ours'],
      ['complaint', null, 'the mailbox uses VERP and the report did not come to a valid VERP address of ours'],
    ]);
    expect(await db().suppression.count({ where: { accountId: tenant.account.id } })).toBe(0);
    expect(await db().message.count({ where: { sendId: sent.body.id, status: 'sent' } })).toBe(2);

    // the feedback loop's copy of the original carries its VERP Return-Path: proof enough
    const joEnvelope = sink.to('jo@verp-forged.test')[0]!.envelope.from as string;
    await dove.append(user, PASS, arfReport(tenant.mailbox.address, 'jo@verp-forged.test', `Return-Path: <${joEnvelope}>\nFrom: ${tenant.mailbox.address}\nTo: jo@verp-forged.test\nMessage-ID: ${jo.messageIdHeader}\nSubject: Hi`));
    expect((await handled(tenant.mailbox.id, 4))[3]).toMatchObject({ kind: 'complaint', relatedId: jo.id, unmatched: null });
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'jo@verp-forged.test' } })).toMatchObject({ reason: 'complained' });
    // and the real bounce at the VERP address acts
    await dove.append(user, PASS, strangerDsn(envelope, 'ivo@verp-forged.test').replace(/\r\nTo: [^\r]*/, `\r\nTo: ${envelope}\r\nDelivered-To: ${envelope}`));
    expect((await handled(tenant.mailbox.id, 5))[4]).toMatchObject({ kind: 'bounce', relatedId: ivo.id, unmatched: null });
    expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'ivo@verp-forged.test' } })).toMatchObject({ reason: 'bounced', bounceReason: 'userunknown' });
  });

  it('an ARF complaint suppresses the address and puts it on the stop list', async () => {
    const s = await sentTo('gus@arf.test');
    const arf = mail(
      { From: 'abuse@isp.test', To: s.tenant.mailbox.address, Subject: 'Complaint', 'MIME-Version': '1.0', 'Content-Type': 'multipart/report; report-type=feedback-report; boundary="F"' },
      `--F
Content-Type: text/plain

This is an email abuse report.

--F
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: test/1.0
Version: 1
Original-Rcpt-To: gus@arf.test

--F
Content-Type: message/rfc822

From: ${s.tenant.mailbox.address}
To: gus@arf.test
Subject: Hello Ann
Message-ID: ${s.first.messageIdHeader}

Hi
--F--`,
    );
    await dove.append(s.user, PASS, arf);
    expect((await handled(s.mailboxId))[0]).toMatchObject({ kind: 'complaint', prospectId: s.prospectId });
    expect(await db().suppression.findFirst({ where: { accountId: s.tenant.account.id, email: 'gus@arf.test' } })).toMatchObject({ reason: 'complained' });
    expect(await db().stopEntry.count({ where: { accountId: s.tenant.account.id, value: 'gus@arf.test' } })).toBe(1);
    expect(await prospect(s.prospectId)).toMatchObject({ status: 'lost', reason: 'complained' });
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'message.complained' } })).toBe(1);
  });

  it('handles each message once across a reader restart and with two readers at once', async () => {
    const s = await sentTo('hal@once.test');
    await dove.append(s.user, PASS, mail({ From: 'someone@else.test', To: s.tenant.mailbox.address, Subject: 'newsletter' }, 'unrelated'));
    await handled(s.mailboxId, 1);
    // the reader stops; mail arrives meanwhile; a new reader and a second one start together
    await Promise.all(readers.map((r) => r.stop()));
    await dove.append(s.user, PASS, mail({ From: 'hal@once.test', To: s.tenant.mailbox.address, Subject: 'Re: Hello', 'In-Reply-To': s.first.messageIdHeader }, 'ok'));
    await dove.append(s.user, PASS, mail({ From: 'other@else.test', To: s.tenant.mailbox.address, Subject: 'hello' }, 'x'));
    readers = [startInboundReader(db(), { refreshMs: 200 }), startInboundReader(db(), { refreshMs: 200 })];
    const rows = await handled(s.mailboxId, 3);
    await dove.append(s.user, PASS, mail({ From: 'hal@once.test', To: s.tenant.mailbox.address, Subject: 'and again' }, 'y'));
    await handled(s.mailboxId, 4);
    // both readers had the time to see everything: still one row per message
    await new Promise((r) => setTimeout(r, 2500));
    const all = await db().inboundMessage.findMany({ where: { mailboxId: s.mailboxId }, orderBy: { uid: 'asc' } });
    expect(all.map((r) => Number(r.uid))).toEqual([1, 2, 3, 4]);
    expect(rows.map((r) => r.kind)).toEqual(['other', 'reply', 'other']);
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(1);
    expect(Number((await db().inboundCursor.findUniqueOrThrow({ where: { mailboxId: s.mailboxId } })).lastUid)).toBe(4);

    // a new UIDVALIDITY (as after a server rebuild) resets the cursor: no crash, the reader goes on with new mail
    await db().inboundCursor.update({ where: { mailboxId: s.mailboxId }, data: { uidValidity: 1n, lastUid: 99n } });
    await dove.append(s.user, PASS, mail({ From: 'late@else.test', To: s.tenant.mailbox.address, Subject: 'after the reset' }, 'z'));
    const after = await handled(s.mailboxId, 5);
    expect(after[4]).toMatchObject({ subject: 'after the reset', uid: 5n });
    const cursor = await db().inboundCursor.findUniqueOrThrow({ where: { mailboxId: s.mailboxId } });
    expect(cursor.uidValidity).not.toBe(1n);
    expect(cursor.lastUid).toBe(5n);
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'prospect.replied' } })).toBe(1);
  });

  it('a mailbox with a wrong password is shown in error and does not stop another mailbox from reading replies', async () => {
    const bad = await sentTo('ivy@bad.test');
    await updateMailbox(db(), bad.mailboxId, { imap: dove.url(bad.user, 'wrong-password') });
    await waitFor(async () => (await db().mailbox.findUniqueOrThrow({ where: { id: bad.mailboxId } })).inboundState === 'error', { timeout: 20_000, what: 'the error state' });
    const good = await sentTo('jon@good.test');
    await dove.append(good.user, PASS, mail({ From: 'jon@good.test', To: good.tenant.mailbox.address, Subject: 'Re: Hello', 'In-Reply-To': good.first.messageIdHeader }, 'sure'));
    expect((await handled(good.mailboxId))[0]).toMatchObject({ kind: 'reply' });
    const listed = await asAdmin(ctx.api).get('/admin/api/mailboxes');
    const shown = listed.body.mailboxes.find((m: { id: number }) => m.id === bad.mailboxId);
    expect(shown.inbound.state).toBe('error');
    expect(shown.inbound.last_error).toMatch(/auth|fail/i);
    expect(JSON.stringify(listed.body)).not.toContain('wrong-password');
    expect(JSON.stringify(listed.body)).not.toContain(PASS);
    // the console's "Test IMAP": a login, INBOX opened read-only, no secret in the answer
    const refused = await checkImap(await db().mailbox.findUniqueOrThrow({ where: { id: bad.mailboxId } }));
    expect(refused).toMatchObject({ ok: false });
    expect(refused!.message).not.toContain('wrong-password');
    expect(await checkImap(await db().mailbox.findUniqueOrThrow({ where: { id: good.mailboxId } }))).toEqual({ ok: true, message: expect.stringMatching(/accepted the login; INBOX holds 1 messages/) });
  });
});
