import { db } from '../../apps/core/src/db';
import { logger } from '../../apps/core/src/logger';
import { processSequenceStep } from '../../apps/worker/src/processors/sequence';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addProspect, fakeJob, outreach } from '../outreach/support';

/** The worker tells the operator, at info, what became of every email and every sequence step. */
const ctx = useApi();
const sink = useMail({ queues: ['delivery'] });
const lines: { fields: Record<string, unknown>; msg: string }[] = [];
let spy: jest.SpyInstance;
beforeAll(() => {
  spy = jest.spyOn(logger, 'info').mockImplementation(((fields: Record<string, unknown>, msg: string) => {
    lines.push({ fields, msg });
  }) as never);
});
afterAll(() => spy.mockRestore());

const line = (msg: string, message: string) => waitFor(() => lines.find((l) => l.msg === msg && l.fields.message === message), { what: `the "${msg}" line of ${message}` });

it('logs delivered, deferred (with the SMTP answer) and refused for good, with mailbox and domain, never the address', async () => {
  const tenant = await makeTenant({ smtp: sink.url });
  sink.rule = (stage, address) =>
    stage === 'rcpt' && address === 'later@slow.example' ? { code: 451, message: 'greylisted, try later' } : stage === 'rcpt' && address === 'gone@dead.example' ? { code: 550, message: 'no such user' } : undefined;
  const send = async (to: string) => (await as(ctx.api, tenant.token).post('/api/v1/send').send({ to, subject: 's', text: 't' })).body.id as string;
  const [ok, later, gone] = [await send('fine@good.example'), await send('later@slow.example'), await send('gone@dead.example')];
  const messageOf = async (sendId: string) => (await db().message.findFirstOrThrow({ where: { sendId } })).id;

  const delivered = await line('delivered', await messageOf(ok));
  expect(delivered.fields).toMatchObject({ mailbox: tenant.mailbox.id, domain: 'good.example', response: expect.stringMatching(/^250/) });
  const deferred = await line('delivery deferred', await messageOf(later));
  expect(deferred.fields).toMatchObject({ domain: 'slow.example', response: expect.stringMatching(/451.*greylisted/) });
  const refused = await line('delivery refused for good', await messageOf(gone));
  expect(refused.fields).toMatchObject({ domain: 'dead.example', status: 'bounced', response: expect.stringMatching(/550.*no such user/) });
  expect(JSON.stringify(lines)).not.toMatch(/fine@good|later@slow|gone@dead/);
  sink.rule = undefined;
});

it('logs every sequence step: written, waiting for its mailbox, skipped', async () => {
  const { tenant, campaign } = await outreach({ smtp: sink.url, mailbox: { gap_seconds: 3600 } });
  const first = await addProspect(tenant.account.id, campaign.id, { email: 'ann@prospect.example', name: 'Ann' });
  const second = await addProspect(tenant.account.id, campaign.id, { email: 'bob@prospect.example', name: 'Bob' });
  await processSequenceStep(db(), fakeJob<'sequence'>({ prospectId: first, step: 1 }));
  expect(lines.find((l) => l.msg === 'sequence step written' && l.fields.prospect === first)?.fields).toMatchObject({ step: 1, message: expect.any(String) });
  // the mailbox's gap: the second waits
  await processSequenceStep(db(), fakeJob<'sequence'>({ prospectId: second, step: 1 }));
  expect(lines.find((l) => l.msg === 'sequence step waits' && l.fields.prospect === second)?.fields).toMatchObject({ why: 'gap' });
  // a step run again finds the prospect moved on
  await processSequenceStep(db(), fakeJob<'sequence'>({ prospectId: first, step: 1 }));
  expect(lines.find((l) => l.msg === 'sequence step skipped' && l.fields.prospect === first)?.fields).toMatchObject({ why: 'prospect is at step 1' });
});
