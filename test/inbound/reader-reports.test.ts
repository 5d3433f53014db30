import fs from 'node:fs';
import path from 'node:path';
import { db } from '../../apps/core/src/db';
import { readReport } from '../../apps/core/src/inbound/bounces';
import { metrics } from '../../apps/core/src/metrics';
import { updateMailbox } from '../../apps/core/src/mailbox-settings';
import { addSubscriberByKey } from '../../apps/core/src/subscribers/machine';
import { as, asAdmin } from '../helpers/api';
import { makeList } from '../helpers/factories';
import { deliver, outreach } from '../outreach/support';
import { PASS, useImapReader } from './imap-reader';
import { arfReport, dsn, mail, strangerDsn } from './reports';

/** Bounce and complaint reports read over IMAP from a real dovecot: each acts by its reason, a forged one changes nothing. */
const { ctx, worker, sink, dove, freshUser, sentTo, handled, prospect } = useImapReader();

describe('reports read over IMAP (dovecot)', () => {
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
    const user = freshUser();
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
    const user = freshUser();
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
    expect((await asAdmin(ctx.api).get(`/admin/api/inbound?mailbox=${tenant.mailbox.id}&unmatched=false`)).body.messages).toEqual([expect.objectContaining({ id: Number(genuine.id), unmatched: null })]);
  });

  it('VERP mailbox: reports to the plain address or to a made-up token change nothing; a complaint whose original has our VERP Return-Path acts', async () => {
    const user = freshUser();
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
    const arf = arfReport(s.tenant.mailbox.address, 'gus@arf.test', `From: ${s.tenant.mailbox.address}\nTo: gus@arf.test\nSubject: Hello Ann\nMessage-ID: ${s.first.messageIdHeader}`);
    await dove.append(s.user, PASS, arf);
    expect((await handled(s.mailboxId))[0]).toMatchObject({ kind: 'complaint', prospectId: s.prospectId });
    expect(await db().suppression.findFirst({ where: { accountId: s.tenant.account.id, email: 'gus@arf.test' } })).toMatchObject({ reason: 'complained' });
    expect(await db().stopEntry.count({ where: { accountId: s.tenant.account.id, value: 'gus@arf.test' } })).toBe(1);
    expect(await prospect(s.prospectId)).toMatchObject({ status: 'lost', reason: 'complained' });
    expect(await db().event.count({ where: { accountId: s.tenant.account.id, type: 'message.complained' } })).toBe(1);
  });
});
