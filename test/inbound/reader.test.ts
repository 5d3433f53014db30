import { db } from '../../apps/core/src/db';
import { checkImap } from '../../apps/core/src/mailbox-settings/check';
import { startInboundReader } from '../../apps/core/src/inbound/reader';
import { metrics } from '../../apps/core/src/metrics';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { asAdmin } from '../helpers/api';
import { waitFor } from '../helpers/wait';
import { deliver, stepMessage } from '../outreach/support';
import { PASS, useImapReader } from './imap-reader';
import { mail } from './reports';

/**
 * Replies read over IMAP from a real dovecot: a reply stops a sequence, mail that only claims to be from the prospect
 * does not, an out-of-office postpones it, each message is read once, and a wrong password stops no other mailbox.
 */
const { ctx, worker, sink, dove, readers, sentTo, handled, prospect } = useImapReader();
const DAY = 86_400_000;

const inboundCount = async (kind: string) => (await metrics.inboundMessages.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;

describe('replies read over IMAP (dovecot)', () => {
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


  it('handles each message once across a reader restart and with two readers at once', async () => {
    const s = await sentTo('hal@once.test');
    await dove.append(s.user, PASS, mail({ From: 'someone@else.test', To: s.tenant.mailbox.address, Subject: 'newsletter' }, 'unrelated'));
    await handled(s.mailboxId, 1);
    // the reader stops; mail arrives meanwhile; a new reader and a second one start together
    await Promise.all(readers.splice(0).map((r) => r.stop()));
    await dove.append(s.user, PASS, mail({ From: 'hal@once.test', To: s.tenant.mailbox.address, Subject: 'Re: Hello', 'In-Reply-To': s.first.messageIdHeader }, 'ok'));
    await dove.append(s.user, PASS, mail({ From: 'other@else.test', To: s.tenant.mailbox.address, Subject: 'hello' }, 'x'));
    readers.push(startInboundReader(db(), { refreshMs: 200 }), startInboundReader(db(), { refreshMs: 200 }));
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
