import { db } from '../../apps/core/src/db';
import { createDelivery, deliverMessage, type Delivery } from '../../apps/core/src/delivery/deliver';
import { EmailKinds } from '../../apps/core/src/delivery/kinds';
import { deliveryRegistrations, EMAIL_KINDS } from '../../apps/core/src/email-kinds';
import { createRedis, rkey } from '../../apps/core/src/redis';
import { sendCopies } from '../../apps/core/src/sending/email-kind';
import { MessageKind } from '../../generated/prisma/enums';
import { makeTenant } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { writtenCopies } from './helpers';

/**
 * What delivery takes from each kind of email comes from one list (core/src/email-kinds), handed down by each process's
 * main: a kind left out stops the process at start, and what a kind registered is what runs; so does the bounce
 * policy that reads a permanent refusal. (The other parts are
 * caught where they act: a guard left out by test/sending/wiring.test.ts, which runs the worker's main as a process;
 * auto-pause's hooks by test/outreach/auto-pause.test.ts, "pauses a sending broadcast when the copies that end well
 * after its early bounces bring the window to 20"; the links by the tests that read them on the wire.)
 */
describe('the registrations of the kinds of email', () => {
  it('covers every kind of the schema, each guarded kind with its guard', () => {
    const { kinds } = deliveryRegistrations();
    expect(Object.keys(kinds.guards).sort()).toEqual(['confirmation', 'sequence', 'series']);
    const covered = new Set(EMAIL_KINDS.flatMap((k) => k.kinds));
    expect([...covered].sort()).toEqual(Object.values(MessageKind).sort());
  });

  it('refuses a list that leaves a kind out: the process does not start', () => {
    expect(() => new EmailKinds(EMAIL_KINDS.filter((k) => k !== sendCopies))).toThrow('email kinds: no registration for transactional');
    expect(() => deliveryRegistrations(EMAIL_KINDS.filter((k) => !k.kinds.includes('series')))).toThrow(/no registration for series/);
  });

  it('refuses registrations without a bounce policy or a sign-in: the process does not start', () => {
    const all = deliveryRegistrations();
    expect(() => createDelivery(db(), { ...all, refusals: undefined as never })).toThrow('delivery: no refusals registered (core/src/email-kinds/)');
    expect(() => createDelivery(db(), { ...all, logins: undefined as never })).toThrow('delivery: no logins registered');
  });

  it('refuses a kind with two guards or two link-fillers', () => {
    expect(() => new EmailKinds([...EMAIL_KINDS, { kinds: ['sequence'], guard: async () => null }])).toThrow('email kinds: sequence has two pre-send guards');
    expect(() => new EmailKinds([...EMAIL_KINDS, { kinds: ['broadcast'], links: (s) => s }])).toThrow('email kinds: broadcast has two registrations with links');
  });
});

describe('a permanent refusal at delivery', () => {
  const sink = useMail();
  afterEach(() => (sink.rule = undefined));

  async function refused(delivery: Delivery, to: string) {
    const tenant = await makeTenant({ smtp: sink.url });
    sink.rule = (stage, address) => (stage === 'rcpt' && address === to ? { code: 550, message: '5.1.1 user unknown' } : undefined);
    const [id] = [...(await writtenCopies(tenant, [to])).values()];
    try {
      expect(await deliverMessage(delivery, id!, { lastAttempt: false })).toMatchObject({ kind: 'rejected' });
    } finally {
      delivery.close();
    }
    const row = await db().message.findUniqueOrThrow({ where: { id: id! } });
    const suppression = await db().suppression.findUnique({ where: { accountId_email: { accountId: tenant.account.id, email: to } } });
    return { row, suppression };
  }

  it("is read and applied by inbound's bounce policy, registered in the list: bounced, the dead address suppressed", async () => {
    const { row, suppression } = await refused(createDelivery(db(), deliveryRegistrations()), `gone-${Date.now()}@example.org`);
    expect(row).toMatchObject({ status: 'bounced', bounce: expect.objectContaining({ reason: 'userunknown', dead: true }) });
    expect(suppression).toMatchObject({ reason: 'bounced', bounceReason: 'userunknown' });
  });

  it('does what the registered policy says, not a rule of its own (the check above sees the registration)', async () => {
    const lenient = { ...deliveryRegistrations(), refusals: () => ({ status: 'failed' as const, dead: false, apply: async () => undefined }) };
    const { row, suppression } = await refused(createDelivery(db(), lenient), `kept-${Date.now()}@example.org`);
    expect(row).toMatchObject({ status: 'failed', bounce: null });
    expect(suppression).toBeNull();
  });
});

describe("what follows a send's delivery", () => {
  const sink = useMail();
  const listener = createRedis({ maxRetriesPerRequest: null });
  const heard: string[] = [];
  beforeAll(async () => {
    listener.on('message', (_channel, ids: string) => heard.push(...ids.split(',')));
    await listener.subscribe(rkey('messages', 'finished'));
  });
  afterAll(() => listener.quit());

  async function deliveredWith(delivery: Delivery): Promise<string> {
    const tenant = await makeTenant({ smtp: sink.url });
    const [id] = [...(await writtenCopies(tenant, [`finished-${Date.now()}@example.org`])).values()];
    try {
      expect(await deliverMessage(delivery, id!, { lastAttempt: false })).toMatchObject({ kind: 'sent' });
    } finally {
      delivery.close();
    }
    return id!;
  }

  it("announces a send's finished copy (Prefer: wait wakes on it) through the sends' registration", async () => {
    const id = await deliveredWith(createDelivery(db(), deliveryRegistrations()));
    await waitFor(() => heard.includes(id), { what: 'the announcement of the finished copy' });
  });

  it('announces nothing when the registration has no such hook (the check above sees the registration, not delivery)', async () => {
    const silent = EMAIL_KINDS.map((k) => (k === sendCopies ? { kinds: k.kinds } : k));
    const id = await deliveredWith(createDelivery(db(), deliveryRegistrations(silent)));
    // a copy announced with it would be heard well within this; the mark has committed (deliverMessage resolved)
    const other = await deliveredWith(createDelivery(db(), deliveryRegistrations()));
    await waitFor(() => heard.includes(other), { what: 'the announcement after it' });
    expect(heard).not.toContain(id);
  });
});
