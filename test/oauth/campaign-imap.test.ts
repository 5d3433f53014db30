import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { startInboundReader, type InboundReader } from '../../apps/core/src/inbound/reader';
import { scheduleDueSteps } from '../../apps/core/src/outreach/scheduler';
import { createWorkers } from '../../apps/worker/src/workers';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeCampaign, wantEvents } from '../helpers/factories';
import { AuthServer, CLIENT, OAuthDovecot, XOAuthSmtp } from '../helpers/oauth';
import { waitFor } from '../helpers/wait';
import { addProspect, stepMessage } from '../outreach/support';

/**
 * A campaign from a mailbox that signs in with OAuth2 end to end: its steps leave through an SMTP server that takes
 * XOAUTH2 only, its replies are read from Debian's dovecot whose only passdb is `oauth2` (each login's token checked at
 * the authorization server's introspection endpoint); tokens expire every few seconds; consent is revoked and given
 * again in the middle.
 */
const ctx = useApi();
const auth = new AuthServer();
const ADDRESS = 'seller@corp.test';
let smtp: XOAuthSmtp;
const dove = new OAuthDovecot();
let delivery: Delivery;
let workers: Worker[] = [];
let reader: InboundReader;

beforeAll(async () => {
  await auth.start();
  await auth.set({ ttl: 4 });
  smtp = await new XOAuthSmtp(auth).start();
  await dove.start(auth, ADDRESS);
  delivery = createDelivery(db(), deliveryRegistrations());
  workers = createWorkers({ db: db(), delivery, queues: ['delivery', 'sequence'], concurrency: 5 });
  reader = startInboundReader(db(), { refreshMs: 200 });
}, 60_000);
afterAll(async () => {
  await reader.stop();
  await Promise.all(workers.map((w) => w.close()));
  delivery.close();
  await dove.stop();
  await smtp.stop();
  await auth.stop();
});

function reply(from: string, inReplyTo: string, body: string): string {
  const headers = { From: from, To: ADDRESS, Subject: 'Re: Hello', Date: new Date().toUTCString(), 'Message-ID': `<${Math.random().toString(36).slice(2)}@dest.test>`, 'In-Reply-To': inReplyTo };
  return `${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n${body}\r\n`;
}

/** The scheduler's tick, as the worker's maintenance runs it, until the step's email has left. */
async function stepSent(prospectId: number, step: number) {
  return waitFor(
    async () => {
      await scheduleDueSteps(db());
      const m = await stepMessage(prospectId, step);
      return m?.status === 'sent' ? m : null;
    },
    { timeout: 20_000, interval: 200, what: `step ${step} of prospect ${prospectId} sent` },
  );
}

const prospect = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });

test('steps go out over XOAUTH2 SMTP and replies are read over XOAUTH2 IMAP, across token expiry and a revoked then given consent', async () => {
  const account = await makeAccount();
  await wantEvents(account.id);
  const created = await asAdmin(ctx.api)
    .post('/admin/api/mailboxes')
    .send({
      account: account.id,
      address: ADDRESS,
      smtp: smtp.url(ADDRESS),
      imap: dove.url(ADDRESS),
      daily_limit: 1000,
      gap_seconds: 0,
      auth: { type: 'oauth2', provider: 'custom', client_id: CLIENT.id, client_secret: CLIENT.secret, refresh_token: await auth.consent(ADDRESS), token_url: auth.tokenUrl },
    });
  expect(created.status).toBe(201);
  const mailboxId = created.body.mailbox.id as number;
  const campaign = await makeCampaign(account.id, mailboxId, {
    status: 'running',
    steps: [
      { subject: 'Hello {{name}}', body: 'Hi {{name}}', delay_hours: 0 },
      { subject: 'Hello {{name}}', body: 'Any news, {{name}}?', delay_hours: 0.0005 },
    ],
  });

  // step 1 to Ann over XOAUTH2; Ann answers; the reader (XOAUTH2 at dovecot) stops her sequence
  const ann = await addProspect(account.id, campaign.id, { email: 'ann@dest.test', name: 'Ann' });
  const first = await stepSent(ann, 1);
  expect(smtp.to('ann@dest.test')).toHaveLength(1);
  expect(smtp.to('ann@dest.test')[0]!.user).toBe(ADDRESS);
  await waitFor(async () => (await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } })).inboundState === 'idle', { timeout: 20_000, what: 'the reader logged in' });
  await dove.append(auth, ADDRESS, reply('Ann <ann@dest.test>', first.messageIdHeader, 'Yes please.'));
  await waitFor(async () => (await prospect(ann)).status === 'replied', { timeout: 20_000, what: 'Ann replied' });

  // Bob's first step, then past the access token's life: his second step still goes out, nothing refused or failed
  const bob = await addProspect(account.id, campaign.id, { email: 'bob@dest.test', name: 'Bob' });
  await stepSent(bob, 1);
  await new Promise((resolve) => setTimeout(resolve, 4_500));
  smtp.dropSessions();
  await stepSent(bob, 2);
  expect(smtp.to('bob@dest.test')).toHaveLength(2);
  expect(smtp.refusedLogins).toBe(0);

  // consent revoked: Cat's first step waits (written and held, or not written at all); nothing fails
  await auth.revoke(ADDRESS);
  smtp.dropSessions();
  const cat = await addProspect(account.id, campaign.id, { email: 'cat@dest.test', name: 'Cat' });
  await waitFor(
    async () => {
      await scheduleDueSteps(db());
      return (await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } })).authStatus === 'needs_reconnect';
    },
    { timeout: 20_000, interval: 200, what: 'needs_reconnect' },
  );
  const dan = await addProspect(account.id, campaign.id, { email: 'dan@dest.test', name: 'Dan' });
  for (let i = 0; i < 5; i++) {
    await scheduleDueSteps(db());
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  expect(await stepMessage(dan, 1)).toBeNull();
  expect(smtp.to('cat@dest.test')).toHaveLength(0);
  expect(await db().message.count({ where: { mailboxId, status: { in: ['failed', 'cancelled', 'bounced'] } } })).toBe(0);
  await waitFor(async () => (await db().mailbox.findUniqueOrThrow({ where: { id: mailboxId } })).inboundState === 'error', { what: 'the reader stopped' });
  expect(await db().event.count({ where: { accountId: account.id, type: 'mailbox.disconnected' } })).toBe(1);

  // reconnected: Cat's and Dan's first steps go out, once each; Dan's reply is read
  const fresh = await auth.consent(ADDRESS);
  expect((await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${mailboxId}`).send({ auth: { type: 'oauth2', provider: 'custom', refresh_token: fresh } })).status).toBe(200);
  await stepSent(cat, 1);
  const danFirst = await stepSent(dan, 1);
  await dove.append(auth, ADDRESS, reply('dan@dest.test', danFirst.messageIdHeader, 'Interested.'));
  await waitFor(async () => (await prospect(dan)).status === 'replied', { timeout: 20_000, what: 'Dan replied' });
  expect(await db().message.count({ where: { mailboxId, status: { in: ['failed', 'cancelled', 'bounced'] } } })).toBe(0);
  // every email written went out, and each exactly once
  const sent = await db().message.findMany({ where: { mailboxId, status: 'sent' } });
  const wire = smtp.messages.map((m) => m.parsed.messageId);
  expect(wire.length).toBe(new Set(wire).size);
  expect(new Set(wire)).toEqual(new Set(sent.map((m) => m.messageIdHeader)));
  expect(sent.filter((m) => m.to === 'cat@dest.test' || m.to === 'dan@dest.test').map((m) => `${m.to} ${m.step}`)).toEqual(
    expect.arrayContaining(['cat@dest.test 1', 'dan@dest.test 1']),
  );
}, 120_000);
