import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { verpAddress } from '../../apps/core/src/delivery/verp';
import { useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { Postfix } from '../helpers/postfix';
import { waitFor } from '../helpers/wait';
import { runClient } from '../smtp/support';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';
import { dkimKey, inboundDomain, message, useMx } from './support';

/**
 * A real Debian Postfix in front of the MX (docs/mx.md): it relays mail for an inbound domain to the MX by its
 * transport_maps, and the DSNs it writes itself for mail it cannot deliver go back to the VERP return path, at the MX.
 */
const signing = dkimKey();
const dns = useDns(['signed.test'], [
  txt('signed.test', 'v=spf1 ip4:127.0.0.1 -all'),
  txt('_dmarc.signed.test', 'v=DMARC1; p=reject'),
  txt('mx2026._domainkey.signed.test', signing.record),
]);
const ctx = useApi();
const receiver = useReceiver();
useMail({ queues: ['webhook'] });
useDispatcher();
const mx = useMx(dns);
const postfix = new Postfix();
beforeAll(() => postfix.start({ 'in-pf.test': mx.port, 'verp-pf.test': mx.port, 'example.com': mx.port }), 30_000);
afterAll(() => postfix.stop());

const swaks = (args: string[], input?: string) => runClient('swaks', ['--server', `127.0.0.1:${postfix.port}`, '--helo', 'client.test', ...args], input);

it('Postfix -> MX -> webhook: a DKIM-signed message relayed by Postfix arrives as inbound.received with its auth results', async () => {
  const tenant = await inboundDomain(ctx.api, 'in-pf.test', [{ match: 'help', action: 'webhook' }]);
  const h = await hook(ctx.api, tenant.account.id, receiver, ['inbound.received']);
  const raw = await message({ From: 'Ann <ann@signed.test>', To: 'help@in-pf.test', Subject: 'Through Postfix' }, 'Hello from behind a relay.', { domain: 'signed.test', selector: 'mx2026', privateKey: signing.privateKey });
  const sent = await swaks(['--from', 'ann@signed.test', '--to', 'help@in-pf.test', '--data', '-'], raw);
  expect(sent.out).toMatch(/<- {1,2}250 2\.0\.0 Ok: queued/);
  const [event] = await waitFor(() => (receiver.accepted('inbound.received', (d) => d.domain === 'in-pf.test').length ? receiver.accepted('inbound.received', (d) => d.domain === 'in-pf.test') : undefined), {
    timeout: 30_000,
    what: `inbound.received (postfix log: ${postfix.log().slice(-800)})`,
  });
  expect(event!.verifiedBy).toEqual([h.secret]);
  expect(event!.data).toMatchObject({
    envelope: { from: 'ann@signed.test', to: ['help@in-pf.test'] },
    subject: 'Through Postfix',
    auth: { spf: { result: 'pass' }, dkim: [{ domain: 'signed.test', selector: 'mx2026', result: 'pass' }], dmarc: { result: 'pass' } },
  });
  const [row] = await db().mxMessage.findMany({ where: { accountId: tenant.account.id } });
  expect(row).toMatchObject({ helo: 'relay.test', clientAddress: '127.0.0.1' });
}, 60_000);

it('a real DSN written by Postfix reaches the MX at the VERP return path and suppresses the address; a forged report to a route address does nothing', async () => {
  const tenant = await makeTenant();
  const id = crypto.randomUUID();
  await db().message.create({
    data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'transactional', to: 'nobody-here@dead.test', subject: 's', messageIdHeader: `<${id}@ours.test>`, status: 'sent', sentAt: new Date() },
  });
  const returnPath = verpAddress(tenant.mailbox.address, id);
  expect(returnPath).toMatch(/@example\.com$/);
  // the message as we sent it, to an address Postfix has no user for: it writes the DSN to the envelope sender
  const original = await message({ From: tenant.mailbox.address, To: 'nobody-here@dead.test', Subject: 's', 'Message-ID': `<${id}@ours.test>` }, 'hello');
  const sent = await swaks(['--from', returnPath, '--to', 'nobody-here@dead.test', '--data', '-'], original);
  expect(sent.out).toMatch(/<- {1,2}250 2\.0\.0 Ok: queued/);
  const suppression = await waitFor(() => db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'nobody-here@dead.test' } }), {
    timeout: 30_000,
    what: `the suppression (postfix log: ${postfix.log().slice(-1500)})`,
  });
  expect(suppression).toMatchObject({ reason: 'bounced' });
  expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'bounced' });
  const [handled] = await db().inboundMessage.findMany({ where: { mailboxId: tenant.mailbox.id, uidValidity: 0n } });
  expect(handled).toMatchObject({ kind: 'bounce', relatedId: id, unmatched: null });

  // a report naming our Message-ID, sent to an ordinary route address: a message for the customer, no suppression
  const other = await inboundDomain(ctx.api, 'verp-pf.test', [{ match: '*', action: 'webhook' }]);
  const second = crypto.randomUUID();
  await db().message.create({
    data: { id: second, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'transactional', to: 'kept@dead.test', subject: 's', messageIdHeader: `<${second}@ours.test>`, status: 'sent', sentAt: new Date() },
  });
  const forged = [
    'From: MAILER-DAEMON@relay.test',
    'To: inbox@verp-pf.test',
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="zz"',
    '',
    '--zz',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.test',
    '',
    'Final-Recipient: rfc822; kept@dead.test',
    'Action: failed',
    'Status: 5.1.1',
    '',
    '--zz',
    'Content-Type: text/rfc822-headers',
    '',
    `Message-ID: <${second}@ours.test>`,
    '',
    '--zz--',
    '',
  ].join('\r\n');
  const forgedSent = await swaks(['--from', '', '--to', 'inbox@verp-pf.test', '--data', '-'], forged);
  expect(forgedSent.out).toMatch(/<- {1,2}250 2\.0\.0 Ok: queued/);
  await waitFor(async () => (await db().mxMessage.count({ where: { accountId: other.account.id } })) === 1, { timeout: 30_000, what: 'the forged report at the MX' });
  expect(await db().suppression.findFirst({ where: { accountId: tenant.account.id, email: 'kept@dead.test' } })).toBeNull();
  expect(await db().message.findUniqueOrThrow({ where: { id: second } })).toMatchObject({ status: 'sent' });
}, 90_000);
