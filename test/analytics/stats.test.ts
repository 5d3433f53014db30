import crypto from 'node:crypto';
import request from 'supertest';
import { unsubscribeToken } from '../../apps/core/src/subscriber-links/unsubscribe';
import { db, rawQuery } from '../../apps/core/src/db';
import type { InboundMail } from '../../apps/core/src/inbound/classify';
import { handleInbound } from '../../apps/core/src/inbound/handle';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addSubscriber, waitStatus } from '../broadcasts/support';

const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);
const today = () => new Date().toISOString().slice(0, 10);

let uid = 0n;
/** One inbound email read from the mailbox's INBOX (a DSN, a complaint or a reply), handled as the reader does. */
async function inbound(mailboxId: number, mail: Partial<InboundMail>) {
  const mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } });
  const full: InboundMail = { kind: 'message', from: '', subject: 'Re', messageId: null, date: new Date(), threadIds: [], report: null, returnDate: null, to: '', text: 'Re', html: null, attachments: [], invalid: false, ...mail } as InboundMail;
  return handleInbound(db(), { mailbox, uidValidity: 1n, uid: ++uid }, full);
}

const dayOf = (body: { days: ({ date: string } & Record<string, number>)[] }) => body.days.find((d) => d.date === today())!;

describe('GET /admin/api/stats', () => {
  it('counts what happened, equal to the rows underneath: sends, bounces (dead and other), complaints, unsubscribes, replies', async () => {
    sink.rule = (stage, address) => (stage === 'rcpt' && address.startsWith('dead') ? { code: 550, message: '5.1.1 no such user' } : undefined);
    const tenant = await makeTenant({ smtp: sink.url });
    const accountId = tenant.account.id;

    // 6 transactional copies: 4 delivered, 2 refused at RCPT (dead bounces)
    const to = ['a1@example.org', 'a2@example.org', 'a3@example.org', 'a4@example.org', 'dead1@example.org', 'dead2@example.org'];
    const sent = await as(app.api, tenant.token).post('/api/v1/send').send({ to, subject: 'Hi', text: 'x' });
    expect(sent.status).toBe(202);
    await waitFor(async () => (await db().message.count({ where: { sendId: sent.body.id, status: { in: ['sent', 'bounced'] } } })) === 6, { timeout: 20_000 });

    // a broadcast to 4 people; 2 of them leave through its unsubscribe link
    const list = await db().list.create({ data: { accountId, mailboxId: tenant.mailbox.id, key: `l${Date.now()}`, name: 'News', confirm: false } });
    const people = await Promise.all(['r1', 'r2', 'r3', 'r4'].map((n) => addSubscriber(list.id, `${n}@readers.org`)));
    const created = await admin().post('/admin/api/broadcasts').send({ list: list.key, subject: 'Weekly', text: 'Hello' });
    const broadcast = created.body.broadcast.id as number;
    await admin().patch(`/admin/api/broadcasts/${broadcast}`).send({ status: 'sending' });
    await waitStatus(broadcast, 'sent');
    for (const person of people.slice(0, 2)) {
      const res = await request(app.api.app).post(`/u/${unsubscribeToken(person.id)}`).type('form').send('List-Unsubscribe=One-Click');
      expect(res.status).toBe(200);
    }
    // a second click of the same link is no second unsubscribe
    await request(app.api.app).post(`/u/${unsubscribeToken(people[0]!.id)}`).type('form').send('List-Unsubscribe=One-Click');

    // a DSN of a full mailbox for a1 (bounced, not a dead address: other), a complaint about a2
    const copies = await db().message.findMany({ where: { sendId: sent.body.id } });
    const header = (address: string) => copies.find((m) => m.to === address)!.messageIdHeader;
    const full = { address: 'a1@example.org', status: '5.2.2', smtpCode: '552', diagnostic: 'mailbox full', reason: 'mailboxfull' as const, dead: false, permanent: true };
    await inbound(tenant.mailbox.id, {
      kind: 'bounce',
      report: { recipient: full.address, originalId: header(full.address), status: full.status, diagnostic: full.diagnostic, reason: full.reason, reasonClass: 'mailbox', smtpCode: full.smtpCode, dead: false, recipients: [full], addresses: [full.address], feedbackType: null },
    });
    await inbound(tenant.mailbox.id, {
      kind: 'complaint',
      report: { recipient: 'a2@example.org', originalId: header('a2@example.org'), status: null, diagnostic: '', reason: null, reasonClass: null, smtpCode: null, dead: false, recipients: [], addresses: ['a2@example.org'], feedbackType: 'abuse' },
    });

    // a campaign: one prospect replies (twice: counted once)
    const campaign = await makeCampaign(accountId, tenant.mailbox.id);
    const lead = await db().prospect.create({ data: { campaignId: campaign.id, email: 'lead@prospects.org', status: 'writing', step: 1 } });
    // the step it answers (a reply counts only when it names an email of ours: docs/inbound.md)
    const step = await db().message.create({
      data: { id: crypto.randomUUID(), accountId, mailboxId: tenant.mailbox.id, kind: 'sequence', to: 'lead@prospects.org', subject: 'Hello', messageIdHeader: `<step-${lead.id}@stats.test>`, prospectId: lead.id, status: 'cancelled' },
    });
    await inbound(tenant.mailbox.id, { kind: 'message', from: 'lead@prospects.org', threadIds: [step.messageIdHeader] });
    await inbound(tenant.mailbox.id, { kind: 'message', from: 'lead@prospects.org', threadIds: [step.messageIdHeader] });

    const res = await admin().get('/admin/api/stats').query({ account: accountId });
    expect(res.status).toBe(200);
    expect(res.body.days).toHaveLength(30);
    expect(res.body.to).toBe(today());
    const counted = dayOf(res.body);

    const [rows] = await rawQuery<Record<string, number>>(
      db(),
      `SELECT
         (SELECT count(*)::int FROM messages WHERE account_id = $1 AND attempts > 0 AND status IN ('sent', 'bounced', 'failed')) AS sent,
         (SELECT count(*)::int FROM messages WHERE account_id = $1 AND sent_at IS NOT NULL) AS delivered,
         (SELECT count(*)::int FROM messages WHERE account_id = $1 AND status = 'bounced') AS bounced,
         (SELECT count(*)::int FROM suppressions WHERE account_id = $1 AND reason = 'complained') AS complained,
         (SELECT count(*)::int FROM subscribers WHERE list_id = $2 AND status = 'unsubscribed') AS unsubscribed,
         (SELECT count(*)::int FROM prospects WHERE campaign_id = $3 AND status = 'replied') AS replied`,
      [accountId, list.id, campaign.id],
    );
    expect(rows).toEqual({ sent: 10, delivered: 8, bounced: 3, complained: 1, unsubscribed: 2, replied: 1 });
    expect(counted).toEqual({
      date: today(),
      sent: rows!.sent,
      delivered: rows!.delivered,
      bounced_dead: 2,
      bounced_other: 1,
      complained: rows!.complained,
      unsubscribed: rows!.unsubscribed,
      replied: rows!.replied,
      clicked: 0,
      opened: 0,
    });
    expect(counted.bounced_dead! + counted.bounced_other!).toBe(rows!.bounced);

    // the same counts through each filter: the broadcast alone, the campaign alone, the mailbox
    const ofBroadcast = dayOf((await admin().get('/admin/api/stats').query({ broadcast })).body);
    expect(ofBroadcast).toMatchObject({ sent: 4, delivered: 4, unsubscribed: 2, bounced_dead: 0 });
    const ofCampaign = dayOf((await admin().get('/admin/api/stats').query({ campaign: campaign.id })).body);
    expect(ofCampaign).toMatchObject({ sent: 0, replied: 1 });
    const ofMailbox = dayOf((await admin().get('/admin/api/stats').query({ account: accountId, mailbox: tenant.mailbox.id })).body);
    expect(ofMailbox).toEqual(counted);
    sink.rule = undefined;
  });

  it('answers every day of the range, zeros included, oldest first', async () => {
    const res = await admin().get('/admin/api/stats').query({ from: '2025-12-30', to: '2026-01-02' });
    expect(res.status).toBe(200);
    expect(res.body.days.map((d: { date: string }) => d.date)).toEqual(['2025-12-30', '2025-12-31', '2026-01-01', '2026-01-02']);
    expect(res.body.days[0]).toEqual({ date: '2025-12-30', sent: 0, delivered: 0, bounced_dead: 0, bounced_other: 0, complained: 0, unsubscribed: 0, replied: 0, clicked: 0, opened: 0 });
    const full = await admin().get('/admin/api/stats').query({ from: '2025-01-01', to: '2026-02-04' });
    expect(full.status).toBe(200);
    expect(full.body.days).toHaveLength(400);
  });

  it.each([
    [{ from: '2026-13-01' }, /^from must be a real day/],
    [{ to: '2026-02-30' }, /^to must be a real day/],
    [{ from: '26-1-1' }, /^from must be a date as YYYY-MM-DD/],
    [{ to: 'yesterday' }, /^to must be a date/],
    [{ from: '2026-03-02', to: '2026-03-01' }, /^from must not be after to/],
    [{ from: '2025-01-01', to: '2026-02-05' }, /^from: the range from\.\.to is 401 days, more than 400/],
    [{ account: 'abc' }, /^account must be a number/],
    [{ mailbox: -1 }, /^mailbox must be a positive number/],
    [{ colour: 'red' }, /colour/],
  ])('refuses %j with 400 naming the field', async (query, error) => {
    const res = await admin().get('/admin/api/stats').query(query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(error) });
  });

  it('answers 404 for an account, mailbox, campaign or broadcast that does not exist', async () => {
    for (const field of ['account', 'mailbox', 'campaign', 'broadcast']) {
      const res = await admin().get('/admin/api/stats').query({ [field]: 999999 });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe(`${field} 999999 not found`);
    }
  });

  it('needs the admin token', async () => {
    expect((await request(app.api.app).get('/admin/api/stats')).status).toBe(401);
  });
});
