import { db, rawQuery } from '../../apps/core/src/db';
import { makeCampaign, makeList, makeTenant, wantEvents } from '../helpers/factories';

/** The messages `seedOperatorDay` spreads over the last 60 hours. */
export const SEEDED = 3000;

/** What `seedOperatorDay` made: the ids the operator's pages link to. */
export interface OperatorDay {
  account: number;
  mailbox: number;
  campaign: number;
  broadcast: number;
  /** the message whose story its page tells */
  story: string;
  deferred: string;
  failed: string;
  queued: string;
  sent: string;
}

/**
 * An operator's day, seeded by SQL (operator.test.ts): a few thousand messages over 60 hours in every status, one
 * message with a story (attempts, a bounce, opens, a click, events and webhook deliveries), a running broadcast's last
 * half hour, and a campaign's prospects in several states.
 */
export async function seedOperatorDay(): Promise<OperatorDay> {
  const tenant = await makeTenant();
  const account = tenant.account.id;
  const mailbox = tenant.mailbox.id;
  const webhook = await wantEvents(account);
  const campaign = await makeCampaign(account, mailbox, { name: 'Guest posts' });
  const list = await makeList(account, mailbox, { confirm: false });
  const listRow = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  const broadcast = await db().broadcast.create({ data: { accountId: account, listId: listRow.id, subject: 'Winter news', text: 'x', status: 'sending', audience: 400, startedAt: new Date(Date.now() - 20 * 60_000) } });
  // a few thousand messages over the last 60 hours: 7 domains and defer.test, four kinds of subject, every status
  await rawQuery(
    db(),
    `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, smtp_response, last_error, sent_at, bounce, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, 'transactional',
            CASE WHEN n % 5 = 3 THEN 'user' || n || '@defer.test' ELSE 'r' || (n % 300) || '@d' || (n % 7) || '.example' END,
            (ARRAY['Invoice', 'Welcome aboard', 'Receipt', 'Password reminder'])[1 + n % 4] || ' ' || n,
            '<seed-' || n || '@acme.test>',
            s.status::"MessageStatus", CASE WHEN s.status = 'queued' THEN 0 ELSE 1 + n % 3 END,
            CASE WHEN s.status = 'sent' THEN '250 2.0.0 OK queued as ' || n WHEN s.status = 'bounced' THEN '550 5.1.1 no such user' END,
            CASE WHEN s.status = 'deferred' THEN '421 4.7.0 try again later' WHEN s.status = 'failed' THEN '554 5.7.1 refused' END,
            CASE WHEN s.status = 'sent' THEN at END,
            CASE WHEN s.status = 'bounced' THEN jsonb_build_object('reason', 'userunknown', 'class', 'dead', 'status', '5.1.1', 'smtp_code', '550', 'diagnostic', '550 5.1.1 no such user', 'dead', true, 'at', at) END,
            at, at
     FROM generate_series(1, $3::int) AS n,
          LATERAL (SELECT now() - make_interval(secs => n * 72.0) AS at) t,
          LATERAL (SELECT (ARRAY['sent','sent','sent','sent','sent','sent','bounced','failed','deferred','cancelled'])[1 + n % 10] AS status) s`,
    [account, mailbox, SEEDED],
  );
  // the message whose story the page tells: delivered, then a bounce report, opened and clicked, two events and deliveries
  const [story] = await rawQuery<{ id: string }>(
    db(),
    `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, smtp_response, sent_at, bounce, created_at, updated_at)
     VALUES (gen_random_uuid(), $1, $2, 'transactional', 'ada@story.test', 'Your order 77 has shipped', '<order-77@acme.test>', 'bounced', 2,
             '250 2.0.0 OK id=77', now() - interval '50 minutes',
             jsonb_build_object('reason', 'mailboxfull', 'class', 'mailbox', 'status', '5.2.2', 'smtp_code', '552', 'diagnostic', '552 5.2.2 mailbox full', 'dead', false, 'at', now() - interval '40 minutes'),
             now() - interval '1 hour', now() - interval '40 minutes')
     RETURNING id`,
    [account, mailbox],
  );
  // its first attempt deferred (a row of message_attempts), its second delivered (the message row's)
  await rawQuery(db(), `INSERT INTO message_attempts (message_id, attempt, at, outcome, response) VALUES ($1, 1, now() - interval '55 minutes', 'deferred', '451 4.7.1 Greylisted, try again in 5 minutes')`, [story!.id]);
  await rawQuery(db(), `INSERT INTO message_opens (message_id, account_id, count, first_at, last_at) VALUES ($1, $2, 3, now() - interval '45 minutes', now() - interval '44 minutes')`, [story!.id, account]);
  await rawQuery(db(), `INSERT INTO link_clicks (message_id, account_id, url, at) VALUES ($1, $2, 'https://acme.test/track/77', now() - interval '44 minutes')`, [story!.id, account]);
  for (const [type, minutes] of [['message.sent', 50], ['message.bounced', 40]] as const) {
    const [event] = await rawQuery<{ id: string }>(
      db(),
      `INSERT INTO events (account_id, type, data, created_at, dispatched_at) VALUES ($1, $2, jsonb_build_object('id', $3::text), now() - make_interval(mins => $4::int), now() - make_interval(mins => $4::int))
       RETURNING id`,
      [account, type, story!.id, minutes],
    );
    await rawQuery(db(), `INSERT INTO webhook_deliveries (webhook_id, event_id, type, attempt, status_code, error, at) VALUES ($1, $2, $3, 1, 503, 'Service Unavailable', now() - make_interval(mins => $4::int))`, [webhook.id, event!.id, type, minutes]);
    await rawQuery(db(), `INSERT INTO webhook_deliveries (webhook_id, event_id, type, attempt, status_code, at) VALUES ($1, $2, $3, 2, 200, now() - make_interval(mins => $4::int - 1))`, [webhook.id, event!.id, type, minutes]);
  }
  const one = async (status: string) =>
    (await rawQuery<{ id: string }>(db(), `SELECT id FROM messages WHERE account_id = $1 AND status = $2::"MessageStatus" AND message_id_header LIKE '<seed-%' ORDER BY created_at DESC LIMIT 1`, [account, status]))[0]!.id;
  // a running broadcast's last half hour: copies delivered and bounced minute by minute, and opens
  await rawQuery(
    db(),
    `INSERT INTO messages (id, account_id, mailbox_id, kind, broadcast_id, "to", subject, message_id_header, status, attempts, sent_at, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, 'broadcast', $3, 'reader' || n || '@news.test', 'Winter news', '<bc-' || n || '@acme.test>',
            (CASE WHEN n % 25 = 0 THEN 'bounced' ELSE 'sent' END)::"MessageStatus", 1, now() - make_interval(secs => n * 6.0),
            now() - interval '21 minutes', now() - make_interval(secs => n * 6.0)
     FROM generate_series(1, 300) AS n`,
    [account, mailbox, broadcast.id],
  );
  await rawQuery(
    db(),
    `INSERT INTO message_opens (message_id, account_id, first_at, last_at)
     SELECT id, account_id, updated_at + interval '30 seconds', updated_at + interval '30 seconds' FROM messages WHERE broadcast_id = $1 AND status = 'sent' AND random() < 0.3 AND updated_at < now() - interval '1 minute'`,
    [broadcast.id],
  );
  // prospects of the campaign in several states, some waiting for their next step, some with an answer
  await rawQuery(
    db(),
    `INSERT INTO prospects (campaign_id, email, site, name, status, step, next_at, reply, replied_at, created_at)
     SELECT $1, 'editor' || n || '@blog' || n || '.test', 'blog' || n || '.test', 'Editor ' || n,
            (ARRAY['new','later','replied','lost','agreed'])[1 + n % 5]::"ProspectStatus", n % 3,
            CASE WHEN n % 5 = 1 THEN now() + make_interval(hours => n) END,
            CASE WHEN n % 5 = 2 THEN 'Sounds good, send me the draft ' || n ELSE '' END,
            CASE WHEN n % 5 = 2 THEN now() - make_interval(hours => n) END,
            now() - make_interval(mins => n)
     FROM generate_series(1, 180) AS n`,
    [campaign.id],
  );
  await rawQuery(db(), 'ANALYZE messages');
  return {
    account,
    mailbox,
    campaign: campaign.id,
    broadcast: broadcast.id,
    story: story!.id,
    deferred: await one('deferred'),
    failed: await one('failed'),
    queued: (await rawQuery<{ id: string }>(db(), `UPDATE messages SET status = 'queued', attempts = 0, last_error = NULL WHERE id = (SELECT id FROM messages WHERE account_id = $1 AND status = 'cancelled' ORDER BY created_at DESC LIMIT 1) RETURNING id`, [account]))[0]!.id,
    sent: await one('sent'),
  };
}
