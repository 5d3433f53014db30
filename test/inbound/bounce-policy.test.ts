import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { applyBounce, bounceOf, bounceOfAnswer, countBounce, publicBounce, type Bounce } from '../../apps/core/src/inbound/bounce-policy';
import { metrics } from '../../apps/core/src/metrics';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * What a bounce does (docs/inbound.md, "Bounce reasons"): a dead address is suppressed at once, a mailbox failure once
 * SOFT_BOUNCE_LIMIT (3) of them came to different emails within SOFT_BOUNCE_DAYS and after the address's last reply,
 * anything else never. On real rows: the message, the suppression list and the subscriptions.
 */
const NOW = new Date('2026-11-25T12:00:00.000Z');
const strip = ({ at: _at, ...rest }: Bounce) => rest;

describe('bounceOfAnswer: an SMTP answer at delivery read as a bounce', () => {
  it.each([
    // the command it answered decides: a weak wording after RCPT is about the address, after MAIL about the sender
    ['550 no such user', 'RCPT TO', { reason: 'userunknown', class: 'dead', dead: true }],
    ['550 no such user', 'MAIL FROM', { reason: 'onhold', class: 'mailbox', dead: false }],
    ['550 no such user', 'DATA', { reason: 'contenterror', class: 'not_address', dead: false }],
    // no command given: the answer's own words name it
    ['550 no such user', undefined, { reason: 'userunknown', class: 'dead', dead: true }],
    ['error in reply to DATA command: 550 no such user', undefined, { reason: 'contenterror', class: 'not_address', dead: false }],
    ['error in reply to DATA command: 550 no such user', 'RCPT TO', { reason: 'userunknown', class: 'dead', dead: true }],
    ['error in reply to DATA command: 550 no such user', 'EHLO', { reason: 'contenterror', class: 'not_address', dead: false }],
    // after DATA, a refusal that says nothing clearer is about the content; a clear one keeps its reason
    ['550 sorry', 'DATA', { reason: 'contenterror', class: 'not_address', dead: false }],
    ['', 'DATA', { reason: 'contenterror', class: 'not_address', dead: false }],
    ['550 sorry', 'RCPT TO', { reason: 'onhold', class: 'mailbox', dead: false }],
    ['', 'RCPT TO', { reason: 'undefined', class: 'mailbox', dead: false }],
    ['552 5.2.2 Mailbox full', 'DATA', { reason: 'mailboxfull', class: 'mailbox', dead: false }],
    ['550 5.1.1 User unknown', 'DATA', { reason: 'userunknown', class: 'dead', dead: true }],
  ])('%j answering %s', (answer, command, expected) => {
    expect(bounceOfAnswer(answer, command, NOW)).toMatchObject(expected);
  });

  it('a dead reason is dead only when final: the enhanced status first, then the reply code, else taken as final', () => {
    const dead = (answer: string) => bounceOfAnswer(answer, 'RCPT TO', NOW);
    expect(dead('550 5.1.1 user unknown')).toMatchObject({ class: 'dead', dead: true, status: '5.1.1', smtp_code: '550' });
    expect(dead('450 4.1.1 user unknown')).toMatchObject({ class: 'dead', dead: false, status: '4.1.1', smtp_code: '450' });
    expect(dead('550 4.1.1 user unknown')).toMatchObject({ class: 'dead', dead: false });
    expect(dead('450 5.1.1 user unknown')).toMatchObject({ class: 'dead', dead: true });
    expect(dead('450 no such user')).toMatchObject({ class: 'dead', dead: false, status: null, smtp_code: '450' });
    expect(dead('no such user')).toMatchObject({ class: 'dead', dead: true, status: null, smtp_code: null });
    // a final answer of another class is never dead
    expect(dead('550 5.2.2 mailbox full')).toMatchObject({ class: 'mailbox', dead: false });
  });

  it('keeps the answer on one line as its diagnostic, and the time it was read', () => {
    expect(bounceOfAnswer('550   5.1.1   User   unknown\r\n  here ', 'RCPT TO', NOW)).toEqual({
      reason: 'userunknown',
      class: 'dead',
      status: '5.1.1',
      smtp_code: '550',
      diagnostic: '550 5.1.1 User unknown here',
      dead: true,
      at: '2026-11-25T12:00:00.000Z',
    });
  });
});

describe('bounceOf and publicBounce', () => {
  it('records a failure with its class, the diagnostic cut at 1,000 characters, and when', () => {
    const failed = { reason: 'mailboxfull' as const, status: '4.2.2', smtpCode: '452', diagnostic: 'x'.repeat(1_500), dead: false };
    expect(bounceOf(failed, NOW)).toEqual({ reason: 'mailboxfull', class: 'mailbox', status: '4.2.2', smtp_code: '452', diagnostic: 'x'.repeat(1_000), dead: false, at: '2026-11-25T12:00:00.000Z' });
    expect(Date.parse(bounceOf(failed).at)).toBeGreaterThan(Date.now() - 60_000);
    expect(Date.parse(bounceOfAnswer('550 no', 'RCPT TO').at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('shows a bounce without its time, and none as null', () => {
    const bounce = bounceOfAnswer('550 5.1.1 User unknown', 'RCPT TO', NOW);
    expect(publicBounce(bounce)).toEqual({ reason: 'userunknown', class: 'dead', status: '5.1.1', smtp_code: '550', diagnostic: '550 5.1.1 User unknown', dead: true });
    expect(publicBounce(null)).toBeNull();
    expect(publicBounce(undefined)).toBeNull();
  });
});

describe('countBounce: the /metrics counter', () => {
  const counted = async (labels: { class: string; reason: string }) =>
    (await metrics.bounces.get()).values.find((v) => v.labels.class === labels.class && v.labels.reason === labels.reason)?.value ?? 0;

  it('counts a final bounce by its class and reason, one that is not final as temporary', async () => {
    const bounce = bounceOfAnswer('552 5.2.2 Mailbox full', 'RCPT TO', NOW);
    const final = await counted({ class: 'mailbox', reason: 'mailboxfull' });
    const temporary = await counted({ class: 'temporary', reason: 'mailboxfull' });
    countBounce(bounce);
    expect(await counted({ class: 'mailbox', reason: 'mailboxfull' })).toBe(final + 1);
    countBounce(bounce, false);
    expect(await counted({ class: 'temporary', reason: 'mailboxfull' })).toBe(temporary + 1);
    expect(await counted({ class: 'mailbox', reason: 'mailboxfull' })).toBe(final + 1);
  });
});

describe('applyBounce', () => {
  let tenant: Tenant;
  beforeEach(async () => {
    tenant = await makeTenant();
  });

  /** An email of the tenant's mailbox to `to`, as delivery writes it. */
  async function sentTo(to: string): Promise<string> {
    const id = crypto.randomUUID();
    await db().message.create({
      data: { id, accountId: tenant.account.id, mailboxId: tenant.mailbox.id, kind: 'transactional', to, subject: 's', messageIdHeader: `<${id}@ours.test>`, status: 'sent', sentAt: new Date() },
    });
    return id;
  }

  const apply = (messageId: string, address: string, bounce: Bounce) => db().$transaction((tx) => applyBounce(tx, tenant.account.id, messageId, address, bounce));
  const suppression = (email: string) => db().suppression.findUnique({ where: { accountId_email: { accountId: tenant.account.id, email } } });
  const stored = async (id: string) => (await db().message.findUniqueOrThrow({ where: { id } })).bounce;

  it('a dead address: recorded on the message and suppressed at once, the address trimmed and lower-cased, its subscriptions bounced', async () => {
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().subscriber.create({ data: { listId: list.id, email: 'gone@remote.test', status: 'active' } });
    await db().list.update({ where: { id: list.id }, data: { subscriberCount: 1 } });
    const id = await sentTo('Gone@Remote.test');
    const bounce = bounceOfAnswer('550 5.1.1 User unknown', 'RCPT TO');
    expect(await apply(id, ' Gone@Remote.TEST ', bounce)).toEqual({ suppressed: true });
    expect(await stored(id)).toEqual(bounce);
    expect(await suppression('gone@remote.test')).toMatchObject({ reason: 'bounced', detail: '550 5.1.1 User unknown', bounceReason: 'userunknown' });
    expect(await db().subscriber.findFirst({ where: { listId: list.id } })).toMatchObject({ status: 'bounced' });
    expect((await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount).toBe(0);
  });

  it('a dead address without a diagnostic: suppressed with its reason as the detail', async () => {
    const id = await sentTo('quiet@remote.test');
    const bounce = bounceOf({ reason: 'hostunknown', status: '5.1.2', smtpCode: null, diagnostic: '', dead: true });
    expect(await apply(id, 'quiet@remote.test', bounce)).toEqual({ suppressed: true });
    expect(await suppression('quiet@remote.test')).toMatchObject({ detail: 'hostunknown', bounceReason: 'hostunknown' });
  });

  it('the class decides, not the flag: a report marked dead whose reason is a full mailbox is not suppressed at once', async () => {
    const id = await sentTo('marked@remote.test');
    const bounce = bounceOf({ reason: 'mailboxfull', status: '5.2.2', smtpCode: '552', diagnostic: 'full', dead: true });
    expect(await apply(id, 'marked@remote.test', bounce)).toEqual({ suppressed: false });
    expect(await suppression('marked@remote.test')).toBeNull();
  });

  it('a dead reason that is not final (4xx) suppresses nothing, nor counts as a mailbox failure', async () => {
    for (let i = 0; i < 4; i++) {
      const id = await sentTo('later@remote.test');
      const bounce = bounceOfAnswer('450 4.1.1 user unknown', 'RCPT TO');
      expect(await apply(id, 'later@remote.test', bounce)).toEqual({ suppressed: false });
      expect(await stored(id)).toEqual(bounce);
    }
    expect(await suppression('later@remote.test')).toBeNull();
  });

  it('spam, policy or size never suppress, however many', async () => {
    for (let i = 0; i < 4; i++) {
      const id = await sentTo('strict@remote.test');
      expect(await apply(id, 'strict@remote.test', bounceOfAnswer('554 5.7.1 Service unavailable; blocked using zen.spamhaus.org', 'RCPT TO'))).toEqual({ suppressed: false });
    }
    expect(await suppression('strict@remote.test')).toBeNull();
  });

  it('mailbox failures: the third to a different email suppresses, with the count and the last diagnostic', async () => {
    const full = (n: number) => bounceOfAnswer(`552 5.2.2 Mailbox full (${n})`, 'RCPT TO');
    const first = await sentTo('full@remote.test');
    expect(await apply(first, 'full@remote.test', full(1))).toEqual({ suppressed: false });
    // the same email bouncing again is one failure
    expect(await apply(first, 'full@remote.test', full(1))).toEqual({ suppressed: false });
    expect(await apply(await sentTo('full@remote.test'), 'full@remote.test', full(2))).toEqual({ suppressed: false });
    expect(await suppression('full@remote.test')).toBeNull();
    expect(await apply(await sentTo('FULL@remote.test'), ' Full@Remote.test ', full(3))).toEqual({ suppressed: true });
    expect(await suppression('full@remote.test')).toMatchObject({ reason: 'bounced', detail: '3 mailbox failures within 30 days, the last: 552 5.2.2 Mailbox full (3)', bounceReason: 'mailboxfull' });
    // the operator lifts the suppression: a later refusal that is not about the mailbox does not bring it back
    await db().suppression.delete({ where: { accountId_email: { accountId: tenant.account.id, email: 'full@remote.test' } } });
    expect(await apply(await sentTo('full@remote.test'), 'full@remote.test', bounceOfAnswer('554 5.7.1 Service unavailable; blocked using zen.spamhaus.org', 'RCPT TO'))).toEqual({ suppressed: false });
    expect(await suppression('full@remote.test')).toBeNull();
  });

  it('mailbox failures without a diagnostic name the reason, and the detail is cut at 1,000 characters', async () => {
    const bare = bounceOf({ reason: 'mailboxfull', status: '5.2.2', smtpCode: null, diagnostic: '', dead: false });
    for (let i = 0; i < 2; i++) await apply(await sentTo('bare@remote.test'), 'bare@remote.test', bare);
    expect(await apply(await sentTo('bare@remote.test'), 'bare@remote.test', bare)).toEqual({ suppressed: true });
    expect(await suppression('bare@remote.test')).toMatchObject({ detail: '3 mailbox failures within 30 days, the last: mailboxfull' });

    const long = bounceOf({ reason: 'mailboxfull', status: '5.2.2', smtpCode: null, diagnostic: 'y'.repeat(990), dead: false });
    for (let i = 0; i < 2; i++) await apply(await sentTo('long@remote.test'), 'long@remote.test', long);
    expect(await apply(await sentTo('long@remote.test'), 'long@remote.test', long)).toEqual({ suppressed: true });
    const detail = (await suppression('long@remote.test'))!.detail;
    expect(detail).toHaveLength(1_000);
    expect(detail.startsWith('3 mailbox failures within 30 days, the last: yyy')).toBe(true);
  });
});
