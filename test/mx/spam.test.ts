import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { Rspamd } from '../helpers/rspamd';
import { waitFor } from '../helpers/wait';
import { hook, useDispatcher, useReceiver } from '../webhooks/support';
import { useMail } from '../helpers/mail';
import { inboundDomain, sendToMx, useMx } from './support';

/**
 * Spam scores from Debian's rspamd (docs/mx.md, "Spam"): started here with its own configuration on loopback, named by
 * RSPAMD_URL as in production. Each message's score and symbols go into the row and the event; GTUBE scores high and
 * is held on a route with a spam_threshold, while an ordinary message goes on with its (low) score.
 */
// a fixed port below Linux's ephemeral range (32768-60999), so no connection of another test can hold it
const RSPAMD_PORT = 21310;
process.env.RSPAMD_URL = `http://127.0.0.1:${RSPAMD_PORT}`;
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

const dns = useDns(['plain.test'], [txt('plain.test', 'v=spf1 ip4:127.0.0.1 -all')]);
const rspamd = new Rspamd(RSPAMD_PORT, 0);
beforeAll(async () => {
  rspamd.dnsPort = dns.port;
  await rspamd.start();
}, 150_000);
afterAll(() => rspamd.stop());
const ctx = useApi();
const receiver = useReceiver();
useMail({ queues: ['webhook'] });
useDispatcher();
const mx = useMx(dns);

const send = (to: string, subject: string, body: string) => sendToMx(mx.port, to, subject, body);

it('scores each message with rspamd: GTUBE is over the route\'s spam_threshold and held with its score and symbols; an ordinary message is delivered with its score', async () => {
  const tenant = await inboundDomain(ctx.api, 'in-spam.test', [{ match: 'desk', action: 'webhook', spam_threshold: 10 }]);
  await hook(ctx.api, tenant.account.id, receiver, ['inbound.received']);

  const spam = await send('desk@in-spam.test', 'Test spam mail (GTUBE)', `This is the GTUBE, the Generic Test for Unsolicited Bulk Email\n\n${GTUBE}\n`);
  const ham = await send('desk@in-spam.test', 'Lunch on Friday?', 'Shall we meet at noon at the usual place?\n\nAnn');

  const held = await db().mxMessage.findUniqueOrThrow({ where: { id: spam } });
  expect(held).toMatchObject({ status: 'held', reason: 'spam score 15 over 10' });
  expect(held.spam).toMatchObject({ score: 15, symbols: expect.arrayContaining(['GTUBE']) });
  const listed = await asAdmin(ctx.api).get(`/admin/api/inbound?status=held&account=${tenant.account.id}`);
  expect(listed.body.messages).toEqual([expect.objectContaining({ id: spam, spam: expect.objectContaining({ score: 15 }) })]);

  const [event] = await waitFor(() => (receiver.accepted('inbound.received', (d) => d.id === ham).length ? receiver.accepted('inbound.received', (d) => d.id === ham) : undefined), { timeout: 30_000, what: 'the ordinary message' });
  const scored = (event!.data as { spam: { score: number; symbols: string[] } }).spam;
  expect(scored.score).toBeLessThan(10);
  expect(scored.symbols.length).toBeGreaterThan(0);
  expect(scored.symbols).not.toContain('GTUBE');
  expect(receiver.accepted('inbound.received', (d) => d.id === spam)).toEqual([]);
}, 200_000);
