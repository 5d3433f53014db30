import { db } from '../../apps/core/src/db';
import { deliverMessage, TemporaryDeliveryError } from '../../apps/core/src/delivery/deliver';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { insertMessage, waitForStatus } from '../sending/helpers';

/**
 * Each attempt of a message with its time and SMTP answer (docs/operator.md, "A message's page"): the ones that did not
 * deliver are rows of message_attempts, written by the statement that marks the message; the delivered one is the
 * message row's own. Real attempts against a loopback SMTP server, read back through GET /admin/api/messages/:id.
 */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ queues: ['delivery'], delivery: worker });
beforeEach(() => {
  sink.rule = undefined;
});

interface Attempt {
  attempt: number;
  at: string;
  outcome: string;
  response: string | null;
}

const story = async (id: string) => {
  const res = await asAdmin(ctx.api).get(`/admin/api/messages/${id}`);
  expect(res.status).toBe(200);
  return res.body as { attempts: Attempt[]; steps: { at: string; what: string; detail: string }[]; message: { attempts: number } };
};

/** One attempt as the delivery job makes it; a temporary failure is thrown, as the job throws it for BullMQ. */
const attempt = (id: string, lastAttempt = false) =>
  deliverMessage(worker.delivery, id, { lastAttempt }).catch((err: unknown) => {
    if (err instanceof TemporaryDeliveryError) return 'retry later';
    throw err;
  });

const rowsOf = (messageId: string) => db().messageAttempt.findMany({ where: { messageId }, orderBy: { attempt: 'asc' } });

describe('the attempts of a message', () => {
  it('shows each attempt in order with its exact answer and time: deferred with 451, deferred with 452, then delivered', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const answers = [
      { code: 451, message: '4.3.0 Mail server temporarily rejected message' },
      { code: 452, message: '4.2.2 Mailbox full, try later' },
    ];
    let tries = 0;
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'patient@example.org' ? answers[tries++] : undefined);
    const { id } = await insertMessage(tenant, 'patient@example.org');

    expect(await attempt(id)).toBe('retry later');
    // the attempt's row and the message's mark are one statement: the same instant
    const afterFirst = await db().message.findUniqueOrThrow({ where: { id } });
    expect(afterFirst.status).toBe('deferred');
    expect((await rowsOf(id)).map((r) => r.at.getTime())).toEqual([afterFirst.updatedAt.getTime()]);
    expect(await attempt(id)).toBe('retry later');
    expect(await attempt(id)).toMatchObject({ kind: 'sent' });
    expect(sink.to('patient@example.org')).toHaveLength(1);

    const s = await story(id);
    expect(s.message.attempts).toBe(3);
    expect(s.attempts).toEqual([
      { attempt: 1, at: expect.any(String), outcome: 'deferred', response: '451 4.3.0 Mail server temporarily rejected message' },
      { attempt: 2, at: expect.any(String), outcome: 'deferred', response: '452 4.2.2 Mailbox full, try later' },
      { attempt: 3, at: expect.any(String), outcome: 'sent', response: expect.stringMatching(/^250 /) },
    ]);
    const times = s.attempts.map((a) => Date.parse(a.at));
    expect(times[0]).toBeLessThan(times[1]!);
    expect(times[1]).toBeLessThan(times[2]!);
    const sent = await db().message.findUniqueOrThrow({ where: { id } });
    expect(s.attempts[2]!.at).toBe(sent.sentAt!.toISOString());

    // the page's steps: each attempt with its answer, in time order, then the delivery
    const attemptSteps = s.steps.filter((step) => step.what.startsWith('attempt '));
    expect(attemptSteps.map((step) => [step.what, step.detail])).toEqual([
      ['attempt 1', 'deferred: 451 4.3.0 Mail server temporarily rejected message'],
      ['attempt 2', 'deferred: 452 4.2.2 Mailbox full, try later'],
      ['attempt 3', expect.stringMatching(/^sent: 250 /)],
    ]);
    expect(s.steps.map((step) => step.what)).toEqual(['accepted', 'attempt 1', 'attempt 2', 'attempt 3', 'delivered']);
    expect(attemptSteps.map((step) => step.at)).toEqual(s.attempts.map((a) => a.at));

    // the delivered attempt is the message row's: message_attempts holds the two that did not deliver
    const rows = await rowsOf(id);
    expect(rows.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'deferred'],
      [2, 'deferred'],
    ]);
    expect(rows.every((r) => r.worker === afterFirst.lockedBy)).toBe(true);
  });

  it('shows the 550 of a message refused for good (failed, or bounced at the address), and each answer of one that ran out of attempts', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) =>
      stage === 'data' && address === 'spamtrap@example.org'
        ? { code: 550, message: '5.7.1 Message rejected as spam' }
        : stage === 'rcpt' && address === 'busy@example.org'
          ? { code: 451, message: '4.7.1 Greylisted, come back later' }
          : stage === 'rcpt' && address === 'gone@example.org'
            ? { code: 550, message: '5.1.1 No such user here' }
            : undefined;
    const refused = await insertMessage(tenant, 'spamtrap@example.org');
    expect(await attempt(refused.id)).toMatchObject({ kind: 'rejected', status: 'failed' });
    const s = await story(refused.id);
    expect(s.attempts).toEqual([{ attempt: 1, at: expect.any(String), outcome: 'failed', response: '550 5.7.1 Message rejected as spam' }]);
    expect(s.steps.find((step) => step.what === 'attempt 1')!.detail).toBe('failed: 550 5.7.1 Message rejected as spam');

    // refused for good at the address: bounced at SMTP time
    const gone = await insertMessage(tenant, 'gone@example.org');
    expect(await attempt(gone.id)).toMatchObject({ kind: 'rejected', status: 'bounced' });
    expect((await story(gone.id)).attempts).toEqual([{ attempt: 1, at: expect.any(String), outcome: 'bounced', response: '550 5.1.1 No such user here' }]);

    const busy = await insertMessage(tenant, 'busy@example.org');
    expect(await attempt(busy.id)).toBe('retry later');
    expect(await attempt(busy.id, true)).toBe('retry later');
    const row = await db().message.findUniqueOrThrow({ where: { id: busy.id } });
    expect(row.status).toBe('failed');
    const b = await story(busy.id);
    expect(b.attempts.map((a) => [a.attempt, a.outcome, a.response])).toEqual([
      [1, 'deferred', '451 4.7.1 Greylisted, come back later'],
      [2, 'failed', '451 4.7.1 Greylisted, come back later'],
    ]);
    expect(b.attempts[1]!.at).toBe(row.updatedAt.toISOString());
  });

  it('keeps the error when no server answered, and an answer up to 500 characters', async () => {
    const offline = await makeTenant({ smtp: 'smtp://127.0.0.1:1' });
    const unanswered = await insertMessage(offline, 'offline@example.org');
    expect(await attempt(unanswered.id)).toBe('retry later');
    expect(await rowsOf(unanswered.id)).toEqual([expect.objectContaining({ attempt: 1, outcome: 'deferred', response: expect.stringMatching(/ECONNREFUSED/) })]);

    const tenant = await makeTenant({ smtp: sink.url });
    const long = `4.3.0 ${'very long explanation '.repeat(40)}`;
    sink.rule = (stage, address) => (stage === 'rcpt' && address === 'wordy@example.org' ? { code: 451, message: long } : undefined);
    const wordy = await insertMessage(tenant, 'wordy@example.org');
    expect(await attempt(wordy.id)).toBe('retry later');
    const [row] = await rowsOf(wordy.id);
    expect(row!.response).toBe(`451 ${long}`.slice(0, 500));
  });

  it('writes no attempt row for an email delivered at its first attempt', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const res = await as(ctx.api, tenant.token).post('/api/v1/send').send({ to: 'first@example.org', subject: 'Receipt', text: 'Thanks' });
    expect(res.status).toBe(202);
    const id = res.body.messages[0].id as string;
    const row = await waitForStatus(id, ['sent']);
    expect(await rowsOf(id)).toEqual([]);
    const s = await story(id);
    expect(s.attempts).toEqual([{ attempt: 1, at: row.sentAt!.toISOString(), outcome: 'sent', response: row.smtpResponse }]);
  });
});
