import request from 'supertest';
import { createApp, type ApiApp } from '../../apps/api/src/app';
import { createAccount } from '../../apps/core/src/accounts';
import { closeClient, createDb, rawQuery, type Db } from '../../apps/core/src/db';
import { newId } from '../../apps/core/src/ids';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { createList } from '../../apps/core/src/subscribers/lists';
import { migrate } from '../../apps/core/src/migrate';
import { ADMIN_TOKEN } from '../helpers/api';
import { PgCluster, type PgServer } from '../helpers/pg-cluster';
import { freePort } from '../helpers/processes';
import { waitFor } from '../helpers/wait';

/**
 * DATABASE_READ_URL (docs/deploy.md, "A read replica"): the console's message search and charts, the exports (a list's
 * subscribers as CSV, the audit log as NDJSON) and the broadcast audience's dry run read a streaming replica (made with
 * pg_basebackup) and say how far behind it is; the rest stays on the primary. Replay paused on the replica, what was
 * just written on the primary is not in them until replay resumes.
 */
jest.setTimeout(180_000);

let cluster: PgCluster;
let primary: PgServer;
let standby: PgServer;
let primaryDb: Db;
let standbyDb: Db;
let api: ApiApp;
let spy: jest.SpyInstance;

beforeAll(async () => {
  cluster = new PgCluster();
  primary = cluster.primary(await freePort());
  await migrate(`${primary.url}/mail`);
  standby = cluster.standby(primary, await freePort());
  primaryDb = createDb(`${primary.url}/mail`, 4, false);
  standbyDb = createDb(`${standby.url}/mail`, 1, false);
  const configModule = await import('../../apps/core/src/config');
  const config = configModule.config();
  spy = jest.spyOn(configModule, 'config').mockReturnValue({ ...config, databaseReadUrl: `${standby.url}/mail` });
  api = createApp(primaryDb);
  await api.start();
});

afterAll(async () => {
  await api?.stop();
  spy?.mockRestore();
  await closeClient(primaryDb);
  await closeClient(standbyDb);
  cluster.destroy();
});

async function signedIn() {
  const agent = request.agent(api.app);
  const signin = await agent.get('/admin/signin');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(signin.text)![1]!;
  await agent.post('/admin/signin').type('form').send({ _csrf: csrf, token: ADMIN_TOKEN }).expect(303);
  return agent;
}

it('serves the message search from the replica, says how far behind it is, and finds a new message once the replica has it', async () => {
  const account = await createAccount(primaryDb, { name: 'replicated' });
  const mailbox = await createMailbox(primaryDb, { account: account.id, address: 'sender@example.com', name: 'Sender', smtp: 'smtp://127.0.0.1:2525' });
  const write = (subject: string) => {
    const id = newId();
    return rawQuery(primaryDb, `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header) VALUES ($1::uuid, $2, $3, 'transactional', 'reader@example.org', $4, '<' || $1::text || '@x>')`, [id, account.id, mailbox.id, subject]);
  };
  await write('First of two');
  const agent = await signedIn();
  const search = async () => (await agent.get('/admin/messages?q=reader%40example.org').expect(200)).text;
  await waitFor(async () => (await search()).includes('First of two'), { timeout: 30_000, what: 'the replica to have the first message' });
  expect(await search()).toMatch(/id="read-note">Read from a replica, less than a second behind the primary\./);

  // replay paused: the primary has the second message, the replica (and so the search) not yet
  await rawQuery(standbyDb, 'SELECT pg_wal_replay_pause()');
  await write('Second of two');
  expect((await rawQuery<{ n: number }>(primaryDb, `SELECT count(*)::int AS n FROM messages WHERE subject = 'Second of two'`))[0]!.n).toBe(1);
  await waitFor(async () => (await rawQuery<{ lag: number }>(standbyDb, 'SELECT (pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn())::int AS lag'))[0]!.lag === 1, { timeout: 20_000, what: 'the replica to receive the WAL it does not replay' });
  const behind = await search();
  expect(behind).not.toContain('Second of two');
  expect(behind).toMatch(/id="read-note">Read from a replica, (less than a second|\d+ s) behind the primary\./);
  // the overview's charts say where they read too
  expect((await agent.get('/admin').expect(200)).text).toContain('Charts: Read from a replica');

  await rawQuery(standbyDb, 'SELECT pg_wal_replay_resume()');
  await waitFor(async () => (await search()).includes('Second of two'), { timeout: 30_000, what: 'the replica to replay the second message' });
});

it('serves the exports and the dry runs from the replica, with its lag, and sees a new subscriber once the replica has it', async () => {
  const account = await createAccount(primaryDb, { name: 'exported' });
  const mailbox = await createMailbox(primaryDb, { account: account.id, address: 'lists@example.com', name: 'Lists', smtp: 'smtp://127.0.0.1:2525' });
  const list = await createList(primaryDb, { account: account.id, name: 'Replicated', confirm: false, mailbox: mailbox.id });
  const subscribe = (email: string) =>
    rawQuery(primaryDb, `INSERT INTO subscribers (list_id, email, name, status, confirmed_at) VALUES ($1, $2, 'Reader', 'active', now())`, [list.id, email]);
  await subscribe('first@example.org');
  const admin = (path: string) => request(api.app).get(`/admin/api${path}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
  const csv = async () => {
    const res = await admin(`/lists/${list.id}/subscribers.csv`).expect(200);
    return { text: res.text, lag: res.headers['replica-lag'] };
  };
  const dryRun = async () => {
    const res = await request(api.app).post('/admin/api/broadcasts/audience').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ list: list.key }).expect(200);
    return { count: (res.body as { count: number }).count, lag: res.headers['replica-lag'] };
  };
  await waitFor(async () => (await csv()).text.includes('first@example.org'), { timeout: 30_000, what: 'the replica to have the first subscriber' });
  expect((await csv()).lag).toMatch(/^\d+(\.\d)?$/);
  expect(await dryRun()).toEqual({ count: 1, lag: expect.stringMatching(/^\d+(\.\d)?$/) });

  // replay paused: the primary has the second subscriber, the exports and the dry runs (from the replica) not yet
  await rawQuery(standbyDb, 'SELECT pg_wal_replay_pause()');
  await subscribe('second@example.org');
  await waitFor(async () => (await rawQuery<{ lag: number }>(standbyDb, 'SELECT (pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn())::int AS lag'))[0]!.lag === 1, { timeout: 20_000, what: 'the replica to receive the WAL it does not replay' });
  const behind = await csv();
  expect(behind.text).toContain('first@example.org');
  expect(behind.text).not.toContain('second@example.org');
  expect(Number(behind.lag)).toBeGreaterThanOrEqual(0);
  expect((await dryRun()).count).toBe(1);
  // the console's dry run says where it read, and its CSV download carries the lag too
  const agent = await signedIn();
  const page = await agent.get('/admin/broadcasts').expect(200);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  const flash = await agent.post('/admin/broadcasts/audience').type('form').send({ _csrf: csrf, list: list.key, audience: '' }).redirects(1).expect(200);
  expect(flash.text).toMatch(/This audience of list \S+ is 1 person now\. Read from a replica, (less than a second|\d+ s) behind the primary\./);
  const consoleCsv = await agent.get(`/admin/lists/${list.id}/subscribers.csv`).expect(200);
  expect(consoleCsv.text).not.toContain('second@example.org');
  expect(consoleCsv.headers['replica-lag']).toMatch(/^\d+(\.\d)?$/);
  // the audit log's export too
  expect((await admin('/audit.ndjson').expect(200)).headers['replica-lag']).toMatch(/^\d+(\.\d)?$/);

  await rawQuery(standbyDb, 'SELECT pg_wal_replay_resume()');
  await waitFor(async () => (await csv()).text.includes('second@example.org'), { timeout: 30_000, what: 'the replica to replay the second subscriber' });
  expect((await dryRun()).count).toBe(2);
});
