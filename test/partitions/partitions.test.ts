import { Client } from 'pg';
import request from 'supertest';
import { db, rawQuery } from '../../apps/core/src/db';
import { within } from '../../apps/core/src/deadline';
import { idFloor, newId, sendCopiesFloor } from '../../apps/core/src/ids';
import { boundAt, ensurePartitions, intervalStart, missingRanges, nextIntervalStart, partitionStates, PARTITIONED } from '../../apps/core/src/partitions';
import { createPartition, listPartitions } from '../../apps/core/src/partitions/repository';
import { dropOldRecords } from '../../apps/core/src/retention';
import { ADMIN_TOKEN, as, useApi } from '../helpers/api';
import { makeCampaign, makeTenant, type Tenant } from '../helpers/factories';

/** Time partitions (docs/partitions.md): messages, message_attempts and events by RANGE of their time-ordered ids. */
const ctx = useApi();
const DAY = 86_400_000;
const MONTH = Date.UTC(2026, 10, 1);

const partitionsOf = async (table: string) => (await listPartitions(db(), table as 'messages')).map((p) => p.name);
const tableExists = async (name: string) => (await rawQuery<{ n: number }>(db(), 'SELECT count(*)::int AS n FROM pg_class WHERE relname = $1', [name]))[0]!.n === 1;
const whereIs = async (table: string, column: string, id: string) =>
  (await rawQuery<{ part: string }>(db(), `SELECT tableoid::regclass::text AS part FROM ${table} WHERE ${column} = $1::uuid`, [id]))[0]?.part;

async function insertMessage(t: Tenant, id: string, extra: { status?: string; prospectId?: number; step?: number } = {}) {
  await db().message.create({
    data: { id, accountId: t.account.id, mailboxId: t.mailbox.id, kind: 'transactional', to: 'a@example.org', subject: 'S', messageIdHeader: `<${id}@example.com>`, status: (extra.status ?? 'sent') as 'sent', prospectId: extra.prospectId, step: extra.step },
  });
}

describe('the interval arithmetic', () => {
  it('starts days at midnight, weeks on Monday and months on the first, in UTC', () => {
    const at = Date.UTC(2026, 10, 29, 15, 4, 5); // a Sunday
    expect(new Date(intervalStart(at, 'day')).toISOString()).toBe('2026-11-29T00:00:00.000Z');
    expect(new Date(intervalStart(at, 'week')).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(new Date(intervalStart(at, 'month')).toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(new Date(nextIntervalStart(at, 'month')).toISOString()).toBe('2026-12-01T00:00:00.000Z');
    expect(new Date(nextIntervalStart(Date.UTC(2026, 11, 31), 'week')).toISOString()).toBe('2027-01-04T00:00:00.000Z');
  });

  it('asks for the current interval and three more after what is covered, never for a gap in the past', () => {
    const covered = [{ name: 'x', from: idFloor(MONTH), to: idFloor(Date.UTC(2026, 11, 1)) }];
    const days = missingRanges(covered, Date.UTC(2026, 10, 29, 12), 'day').map((r) => new Date(r.from).toISOString().slice(0, 10));
    expect(days).toEqual(['2026-12-01', '2026-12-02']);
    const months = missingRanges(covered, Date.UTC(2027, 4, 10), 'month').map((r) => new Date(r.from).toISOString().slice(0, 7));
    expect(months).toEqual(['2027-05', '2027-06', '2027-07', '2027-08']);
  });
});

describe("a send's copies' floor", () => {
  it('is a day before a time-ordered send id, and the least id for any other', () => {
    const at = Date.UTC(2026, 10, 29, 15, 4, 5);
    expect(sendCopiesFloor(newId(at))).toBe(idFloor(at - DAY));
    expect(sendCopiesFloor(newId(at)) < newId(at - DAY + 1)).toBe(true);
    // a random (version 4) id, as sends had before time-ordered ids, and one in upper case prune nothing
    expect(sendCopiesFloor('f47ac10b-58cc-4372-a567-0e02b2c3d479')).toBe('00000000-0000-0000-0000-000000000000');
    expect(sendCopiesFloor(newId(at).toUpperCase())).toBe('00000000-0000-0000-0000-000000000000');
  });
});

describe('a fresh database', () => {
  it('has messages, message_attempts and events partitioned, with a default partition and the current month and three ahead', async () => {
    for (const { table } of PARTITIONED) {
      const [kind] = await rawQuery<{ relkind: string }>(db(), 'SELECT relkind::text FROM pg_class WHERE relname = $1', [table]);
      expect(kind!.relkind).toBe('p');
      const names = await partitionsOf(table);
      expect(names).toContain(`${table}_default`);
      let month = intervalStart(Date.now(), 'month');
      for (let i = 0; i < 4; i++) {
        expect(names).toContain(`${table}_p${new Date(month).toISOString().slice(0, 10).replace(/-/g, '')}`);
        month = nextIntervalStart(month, 'month');
      }
    }
    // nothing is missing: the housekeeping task makes none
    expect(await ensurePartitions(db())).toBe(0);
  });

  it('puts an accepted email in the current partition, and a lookup by its id reads that one partition', async () => {
    const t = await makeTenant();
    const sent = await as(ctx.api, t.token).post('/api/v1/send').send({ to: 'reader@example.org', subject: 'Hi', text: 'Hello' });
    expect(sent.status).toBe(202);
    const [message] = await rawQuery<{ id: string }>(db(), 'SELECT id::text FROM messages WHERE account_id = $1', [t.account.id]);
    const current = `messages_p${new Date(intervalStart(Date.now(), 'month')).toISOString().slice(0, 10).replace(/-/g, '')}`;
    expect(await whereIs('messages', 'id', message!.id)).toBe(current);
    const plan = (await rawQuery<{ 'QUERY PLAN': string }>(db(), `EXPLAIN SELECT * FROM messages WHERE id = '${message!.id}'`)).map((r) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain(current);
    expect(new Set(plan.match(/messages_(p\d+|default)/g))).toEqual(new Set([current]));
    // events get time-ordered ids from the database
    const [event] = await rawQuery<{ id: string }>(db(), `INSERT INTO events (account_id, type, data) VALUES ($1, 'message.sent', '{}') RETURNING id::text`, [t.account.id]);
    expect(event!.id[14]).toBe('7');
    expect(await whereIs('events', 'id', event!.id)).toBe(current.replace('messages', 'events'));
  });

  it('keeps one message per prospect step and one copy per broadcast subscriber in their own tables', async () => {
    const t = await makeTenant();
    const campaign = await makeCampaign(t.account.id, t.mailbox.id);
    const prospect = await db().prospect.create({ data: { campaignId: campaign.id, email: 'p@example.org' } });
    const first = newId();
    await insertMessage(t, first, { prospectId: prospect.id, step: 1 });
    await expect(insertMessage(t, newId(), { prospectId: prospect.id, step: 1 })).rejects.toMatchObject({ code: 'P2002' });
    expect(await db().messageStep.findUnique({ where: { prospectId_step: { prospectId: prospect.id, step: 1 } } })).toMatchObject({ messageId: first });
    // the key goes with its message, so a cancelled step can be written again
    await db().message.delete({ where: { id: first } });
    await insertMessage(t, newId(), { prospectId: prospect.id, step: 1 });
  });

  it("reads a send's copies from the send's month on: an older partition held by another session does not stop its lookup, cancel or reschedule", async () => {
    const t = await makeTenant();
    const from = intervalStart(Date.now() - 200 * DAY, 'day');
    const old = 'messages_p_before_sends';
    await createPartition(db(), 'messages', old, boundAt('messages', from), boundAt('messages', from + DAY));
    const sent = await as(ctx.api, t.token).post('/api/v1/send').send({ to: ['a@example.org', 'b@example.org'], subject: 'Hi', text: 'Hello', send_at: new Date(Date.now() + DAY).toISOString() });
    expect(sent.status).toBe(202);
    // a copy made a minute before its send (a clock set back between the two ids) is still one of its copies
    const early = newId(Date.now() - 60_000);
    await insertMessage(t, early, { status: 'queued' });
    await db().message.update({ where: { id: early }, data: { sendId: sent.body.id } });
    // another session holds the old partition: a statement that planned it would wait for the lock
    const holder = new Client({ connectionString: process.env.DATABASE_URL });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${old} IN ACCESS EXCLUSIVE MODE`);
      // a statement that waits for the old partition's lock misses the 3 s
      const found = await within(as(ctx.api, t.token).get(`/api/v1/send/${sent.body.id}`), 3_000, 'GET /send/:id did not answer');
      expect(found.status).toBe(200);
      expect(found.body.messages.map((m: { id: string }) => m.id).sort()).toEqual([...sent.body.messages.map((m: { id: string }) => m.id), early].sort());
      const moved = await within(as(ctx.api, t.token).patch(`/api/v1/send/${sent.body.id}`).send({ send_at: new Date(Date.now() + 2 * DAY).toISOString() }), 3_000, 'PATCH /send/:id did not answer');
      expect(moved.status).toBe(200);
      const cancelled = await within(as(ctx.api, t.token).post(`/api/v1/send/${sent.body.id}/cancel`), 3_000, 'POST /send/:id/cancel did not answer');
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.send.messages.map((m: { status: string }) => m.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
      await rawQuery(db(), `DROP TABLE ${old}`);
    }
  });
});

describe('strays and /metrics', () => {
  it('sends a row no range holds to the default partition, and reports partitions, the oldest and the strays', async () => {
    const t = await makeTenant();
    const farAhead = newId(Date.now() + 400 * DAY);
    await insertMessage(t, farAhead, { status: 'queued' });
    expect(await whereIs('messages', 'id', farAhead)).toBe('messages_default');
    const states = await partitionStates(db());
    expect(states.find((s) => s.table === 'messages')).toMatchObject({ partitions: 4, strays: 1 });
    const metrics = await request(ctx.api.app).get('/metrics').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(metrics.text).toContain('mailservice_db_partitions{table="messages"} 4');
    expect(metrics.text).toContain('mailservice_db_partition_default_rows{table="messages"} 1');
    expect(metrics.text).toContain(`mailservice_db_partition_oldest_seconds{table="events"} ${intervalStart(Date.now(), 'month') / 1000}`);
    // its range cannot be made while the stray sits in the default partition: housekeeping says so and goes on
    expect(await ensurePartitions(db(), Date.now() + 400 * DAY)).toBeGreaterThan(0);
    expect(await partitionsOf('messages')).not.toContain(`messages_p${new Date(intervalStart(Date.now() + 400 * DAY, 'month')).toISOString().slice(0, 10).replace(/-/g, '')}`);
    await db().message.delete({ where: { id: farAhead } });
  });
});

describe('retention by DROP', () => {
  const old = (days: number) => Date.now() - days * DAY;

  it('drops the partitions wholly past RETENTION_DAYS with what points into them, deletes from the one that straddles the line, and keeps a partition holding pending work', async () => {
    const t = await makeTenant();
    // two old days of partitions, before the oldest the migration made
    const firstDay = intervalStart(old(100), 'day');
    const secondDay = firstDay + DAY;
    for (const { table } of PARTITIONED) {
      await createPartition(db(), table, `${table}_p_old1`, boundAt(table, firstDay), boundAt(table, secondDay));
      await createPartition(db(), table, `${table}_p_old2`, boundAt(table, secondDay), boundAt(table, secondDay + DAY));
    }
    const event = async (ms: number, dispatched: boolean) => {
      const id = newId(ms);
      await rawQuery(db(), `INSERT INTO events (id, account_id, type, data, created_at, dispatched_at) VALUES ($1, $2, 'message.sent', '{}', $3, $4)`, [id, t.account.id, new Date(ms), dispatched ? new Date(ms) : null]);
      return id;
    };
    const goneEvent = await event(firstDay + 1000, true);
    const pendingEvent = await event(secondDay + 1000, false);
    const oldMessage = newId(firstDay + 2000);
    await insertMessage(t, oldMessage);
    await db().messageAttempt.create({ data: { messageId: oldMessage, attempt: 1, at: new Date(firstDay + 3000), outcome: 'deferred', response: '451 later' } });
    const webhook = await db().webhook.create({ data: { accountId: t.account.id, url: 'https://hooks.example.com/x', secretEnc: 'x' } });
    await db().webhookJob.create({ data: { eventId: goneEvent, webhookId: webhook.id } });
    // the partition that straddles the line: the current month's, an old dispatched event in it is deleted
    const straddling = await event(Date.now(), true);
    await db().event.update({ where: { id: straddling }, data: { createdAt: new Date(old(40)) } });
    const recent = await event(Date.now(), true);

    const dropped = await dropOldRecords(db());
    // events' first day, the attempts' two days, and both days of the (empty) clicks, opens, MX and inbound partitions
    expect(dropped).toMatchObject({ partitions: 11, events: 1 });
    expect(await tableExists('events_p_old1')).toBe(false);
    expect(await tableExists('message_attempts_p_old1')).toBe(false);
    expect(await tableExists('message_attempts_p_old2')).toBe(false);
    // an event not yet fanned out keeps its partition
    expect(await tableExists('events_p_old2')).toBe(true);
    expect(await db().event.count({ where: { id: { in: [goneEvent, pendingEvent, straddling, recent] } } })).toBe(2);
    expect(await db().event.findUnique({ where: { id: pendingEvent } })).not.toBeNull();
    expect(await db().webhookJob.count({ where: { eventId: goneEvent } })).toBe(0);
    expect(await db().messageAttempt.count({ where: { messageId: oldMessage } })).toBe(0);
    // the email's row stays: MESSAGE_ROWS_DAYS is 0
    expect(await db().message.count({ where: { id: oldMessage } })).toBe(1);

    const { config } = await import('../../apps/core/src/config');
    const spy = jest.spyOn(await import('../../apps/core/src/config'), 'config').mockReturnValue({ ...config(), messageRowsDays: 60 });
    try {
      await db().$executeRaw`UPDATE messages SET updated_at = now() - interval '99 days' WHERE id = ${oldMessage}::uuid`;
      expect(await dropOldRecords(db())).toMatchObject({ partitions: 2 });
    } finally {
      spy.mockRestore();
    }
    expect(await tableExists('messages_p_old1')).toBe(false);
    expect(await db().message.count({ where: { id: oldMessage } })).toBe(0);
  });
});
