import crypto from 'node:crypto';
import { db } from '../../apps/core/src/db';
import { dropOldRecords } from '../../apps/core/src/retention';
import { makeTenant } from '../helpers/factories';

/** RETENTION_DAYS (30) for every table that grows with use; nothing pending goes. */
const DAY = 86_400_000;
const ago = (days: number) => new Date(Date.now() - days * DAY);

it('drops events, webhook deliveries, inbound messages, ended audiences, expired tokens, key usage, clicks, opens and the answers of attempts past RETENTION_DAYS (stats counts 400 days later), and keeps what is recent or pending', async () => {
  const t = await makeTenant();
  const event = (createdAt: Date, dispatchedAt: Date | null) => db().event.create({ data: { accountId: t.account.id, type: 'message.sent', data: {}, createdAt, dispatchedAt } });
  const oldEvent = await event(ago(40), ago(40));
  const pendingOldEvent = await event(ago(40), null);
  const recentEvent = await event(ago(2), ago(2));

  const webhook = await db().webhook.create({ data: { accountId: t.account.id, url: 'https://hooks.example.com/x', secretEnc: 'x' } });
  const delivery = (at: Date) => db().webhookDelivery.create({ data: { webhookId: webhook.id, eventId: recentEvent.id, type: 'message.sent', attempt: 1, statusCode: 200, at } });
  const oldDelivery = await delivery(ago(31));
  const recentDelivery = await delivery(ago(1));

  const inbound = (uid: number, receivedAt: Date) => db().inboundMessage.create({ data: { mailboxId: t.mailbox.id, uidValidity: 1, uid, kind: 'reply', receivedAt } });
  const oldInbound = await inbound(1, ago(60));
  const recentInbound = await inbound(2, ago(3));

  const list = await db().list.create({ data: { accountId: t.account.id, mailboxId: t.mailbox.id, name: 'News', key: `news-${crypto.randomBytes(4).toString('hex')}` } });
  const subscriber = await db().subscriber.create({ data: { listId: list.id, email: 'reader@example.org', status: 'active' } });
  const broadcast = (status: 'sent' | 'sending', updatedAt: Date) =>
    db().broadcast.create({ data: { accountId: t.account.id, listId: list.id, subject: 'S', text: 'T', status, updatedAt, recipients: { create: [{ subscriberId: subscriber.id }] } } });
  const ended = await broadcast('sent', ago(35));
  const sending = await broadcast('sending', ago(35));
  const endedRecently = await broadcast('sent', ago(1));
  // Prisma's @updatedAt sets now() on create: put the ages back as given
  await db().$executeRaw`UPDATE broadcasts SET updated_at = now() - interval '35 days' WHERE id IN (${ended.id}, ${sending.id})`;

  const token = (expiresAt: Date) => db().confirmationToken.create({ data: { subscriberId: subscriber.id, tokenHash: crypto.randomBytes(32).toString('hex'), expiresAt } });
  const oldToken = await token(ago(40));
  const liveToken = await token(ago(-7));

  await db().keyDailyUsage.createMany({ data: [{ apiKeyId: t.keyId, day: ago(45), count: 3 }, { apiKeyId: t.keyId, day: ago(0), count: 1 }] });

  // tracking (clicks, opens) and the daily counts of GET /admin/api/stats (kept 400 days past the retention)
  const tracked = crypto.randomUUID();
  await db().message.create({ data: { id: tracked, accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'broadcast', to: 'reader@example.org', subject: 'S', messageIdHeader: `<${tracked}@example.com>`, status: 'sent' } });
  await db().linkClick.createMany({ data: [ago(31), ago(1)].map((at, i) => ({ messageId: tracked, accountId: t.account.id, url: `https://shop.example/${i}`, at })) });
  const other = crypto.randomUUID();
  await db().message.create({ data: { id: other, accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'broadcast', to: 'other@example.org', subject: 'S', messageIdHeader: `<${other}@example.com>`, status: 'sent' } });
  await db().messageOpen.createMany({ data: [{ messageId: tracked, accountId: t.account.id, firstAt: ago(40), lastAt: ago(40) }, { messageId: other, accountId: t.account.id, firstAt: ago(40), lastAt: ago(2) }] });
  // the answers of an email's attempts that did not deliver (its row keeps the last)
  await db().messageAttempt.createMany({ data: [ago(31), ago(1)].map((at, i) => ({ messageId: tracked, attempt: i + 1, at, outcome: 'deferred' as const, response: '451 4.3.0 try later' })) });
  const counts = (day: Date) => ({ accountId: t.account.id, mailboxId: t.mailbox.id, day, sent: 1 });
  await db().dailyCount.createMany({ data: [counts(ago(440)), counts(ago(300))] });

  const dropped = await dropOldRecords(db());
  expect(dropped).toMatchObject({ events: 1, webhookDeliveries: 1, inboundMessages: 1, broadcastRecipients: 1, confirmationTokens: 1, keyDailyUsage: 1, linkClicks: 1, messageOpens: 1, messageAttempts: 1, dailyCounts: 1, messages: 0, sends: 0 });
  expect(await db().linkClick.count({ where: { messageId: tracked } })).toBe(1);
  expect((await db().messageAttempt.findMany({ where: { messageId: tracked } })).map((a) => a.attempt)).toEqual([2]);
  expect((await db().messageOpen.findMany({ where: { accountId: t.account.id } })).map((o) => o.messageId)).toEqual([other]);
  expect((await db().dailyCount.findMany({ where: { accountId: t.account.id } })).map((c) => c.day.toISOString().slice(0, 10))).toEqual([ago(300).toISOString().slice(0, 10)]);

  expect(await db().event.findUnique({ where: { id: oldEvent.id } })).toBeNull();
  expect(await db().event.findUnique({ where: { id: pendingOldEvent.id } })).not.toBeNull();
  expect(await db().event.findUnique({ where: { id: recentEvent.id } })).not.toBeNull();
  expect(await db().webhookDelivery.findUnique({ where: { id: oldDelivery.id } })).toBeNull();
  expect(await db().webhookDelivery.findUnique({ where: { id: recentDelivery.id } })).not.toBeNull();
  expect(await db().inboundMessage.findUnique({ where: { id: oldInbound.id } })).toBeNull();
  expect(await db().inboundMessage.findUnique({ where: { id: recentInbound.id } })).not.toBeNull();
  const audience = async (id: number) => db().broadcastRecipient.count({ where: { broadcastId: id } });
  expect([await audience(ended.id), await audience(sending.id), await audience(endedRecently.id)]).toEqual([0, 1, 1]);
  expect(await db().confirmationToken.findUnique({ where: { id: oldToken.id } })).toBeNull();
  expect(await db().confirmationToken.findUnique({ where: { id: liveToken.id } })).not.toBeNull();
  expect(await db().keyDailyUsage.count({ where: { apiKeyId: t.keyId } })).toBe(1);

  // idempotent: a second run finds nothing more
  expect(Object.values(await dropOldRecords(db())).every((n) => n === 0)).toBe(true);
});

it('keeps the rows of finished emails unless MESSAGE_ROWS_DAYS is set, then drops them with their attempts, and their Sends', async () => {
  const t = await makeTenant();
  const send = await db().send.create({ data: { id: crypto.randomUUID(), accountId: t.account.id, apiKeyId: t.keyId, subject: 'Old', text: 'x', createdAt: ago(500) } });
  const message = await db().message.create({
    data: { id: crypto.randomUUID(), accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'transactional', sendId: send.id, to: 'a@example.org', subject: 'Old', messageIdHeader: `<${crypto.randomUUID()}@example.com>`, status: 'sent' },
  });
  await db().$executeRaw`UPDATE messages SET updated_at = now() - interval '500 days' WHERE id = ${message.id}::uuid`;
  // an attempt row younger than RETENTION_DAYS still goes with its email's row
  await db().messageAttempt.create({ data: { messageId: message.id, attempt: 1, outcome: 'deferred', response: '421 4.7.0 try again later' } });
  expect((await dropOldRecords(db())).messages).toBe(0);
  expect(await db().message.count({ where: { id: message.id } })).toBe(1);

  const { config } = await import('../../apps/core/src/config');
  const withRows = { ...config(), messageRowsDays: 400 };
  const spy = jest.spyOn(await import('../../apps/core/src/config'), 'config').mockReturnValue(withRows);
  try {
    expect(await dropOldRecords(db())).toMatchObject({ messages: 1, sends: 1 });
  } finally {
    spy.mockRestore();
  }
  expect(await db().message.count({ where: { id: message.id } })).toBe(0);
  expect(await db().messageAttempt.count({ where: { messageId: message.id } })).toBe(0);
  expect(await db().send.count({ where: { id: send.id } })).toBe(0);
});
