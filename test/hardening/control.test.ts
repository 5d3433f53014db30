import { db } from '../../apps/core/src/db';
import { suppressAddress } from '../../apps/core/src/suppressions/suppress';
import { asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeMailbox, makeTenant } from '../helpers/factories';
import { runAdmin, runTs } from '../helpers/processes';
import { SmtpSink } from '../helpers/smtp-sink';

/** The operator reads what they created: campaigns and lists, all of an account or one. */
const ctx = useApi();

describe('admin reads', () => {
  it('GET /admin/api/campaigns?account= and /admin/api/campaigns/:id', async () => {
    const tenant = await makeTenant();
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { name: 'Spring' });
    const all = await asAdmin(ctx.api).get(`/admin/api/campaigns?account=${tenant.account.id}`);
    expect(all.status).toBe(200);
    expect(all.body.campaigns).toEqual([expect.objectContaining({ id: campaign.id, name: 'Spring' })]);
    const one = await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}`);
    expect(one.body).toEqual({ ok: true, campaign: expect.objectContaining({ id: campaign.id, steps: expect.any(Array) }) });
    expect((await asAdmin(ctx.api).get('/admin/api/campaigns/999999')).status).toBe(404);
    expect((await asAdmin(ctx.api).get('/admin/api/campaigns')).status).toBe(400);
  });

  it('GET /admin/api/lists?account= and /admin/api/lists/:id', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { name: 'News' });
    const all = await asAdmin(ctx.api).get(`/admin/api/lists?account=${tenant.account.id}`);
    expect(all.body).toEqual({ ok: true, lists: [expect.objectContaining({ key: list.key, name: 'News' })] });
    const one = await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}`);
    expect(one.body.list).toMatchObject({ id: list.id, key: list.key, account: tenant.account.id, mailbox: tenant.mailbox.id });
    expect((await asAdmin(ctx.api).get('/admin/api/lists/999999')).status).toBe(404);
  });

  it('the other methods still reach their routes', async () => {
    expect((await asAdmin(ctx.api).delete('/admin/api/campaigns')).status).toBe(405);
    expect((await asAdmin(ctx.api).post('/admin/api/lists').send({})).status).toBe(400);
  });
});

describe('admin changes and the lists behind the sends', () => {
  it('PATCH /admin/api/lists/:id: name, double opt-in and mailbox of the same account; never the key', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { name: 'News' });
    const other = await makeMailbox(tenant.account.id);
    const res = await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).send({ name: 'Weekly', confirm: false, mailbox: other.id });
    expect(res.status).toBe(200);
    expect(res.body.list).toMatchObject({ id: list.id, key: list.key, name: 'Weekly', confirm: false, mailbox: other.id });
    const stranger = await makeTenant();
    const refused = await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).send({ name: 'Stolen', mailbox: stranger.mailbox.id });
    expect(refused.status).toBe(404);
    expect((await db().list.findUniqueOrThrow({ where: { id: list.id } })).name).toBe('Weekly');
    expect((await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).send({ key: 'mine' })).status).toBe(400);
    expect((await asAdmin(ctx.api).patch(`/admin/api/lists/${list.id}`).send({})).body.error).toMatch(/nothing to change/);
  });

  it('GET /admin/api/lists/:id/subscribers: status filter, search, keyset pages; and the CSV export', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id);
    await db().subscriber.createMany({
      data: Array.from({ length: 25 }, (_, i) => ({ listId: list.id, email: `p${String(i).padStart(2, '0')}@example.org`, name: i === 3 ? '=cmd()' : `P ${i}`, status: i % 5 ? 'active' : 'unsubscribed' })),
    });
    const first = await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers?status=active&limit=10`);
    expect(first.status).toBe(200);
    expect(first.body.subscribers).toHaveLength(10);
    expect(first.body.subscribers.every((s: { status: string }) => s.status === 'active')).toBe(true);
    const second = await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers?status=active&limit=10&after=${first.body.next}`);
    expect(second.body.subscribers).toHaveLength(10);
    expect(second.body.next).toBeNull();
    expect(new Set([...first.body.subscribers, ...second.body.subscribers].map((s: { email: string }) => s.email)).size).toBe(20);
    const found = await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers?q=p07`);
    expect(found.body.subscribers.map((s: { email: string }) => s.email)).toEqual(['p07@example.org']);
    expect((await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers?status=gone`)).status).toBe(400);
    expect((await asAdmin(ctx.api).get('/admin/api/lists/999999/subscribers')).status).toBe(404);

    const csv = await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers.csv?status=unsubscribed`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe('email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at');
    expect(lines).toHaveLength(6);
    const all = (await asAdmin(ctx.api).get(`/admin/api/lists/${list.id}/subscribers.csv`)).text;
    expect(all).toMatch(/^p03@example\.org,'=cmd\(\),active,/m);
  });

  it('suppressions and the stop list: read by account in pages, remove an entry, and the address is writable again', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
    await db().$transaction((tx) => suppressAddress(tx, tenant.account.id, 'gone@example.org', 'bounced', '5.1.1'));
    await db().$transaction((tx) => suppressAddress(tx, tenant.account.id, 'angry@example.org', 'complained'));
    const page = await asAdmin(ctx.api).get(`/admin/api/suppressions?account=${tenant.account.id}&limit=1`);
    expect(page.status).toBe(200);
    expect(page.body.suppressions).toEqual([expect.objectContaining({ email: 'gone@example.org', reason: 'bounced', detail: '5.1.1' })]);
    const rest = await asAdmin(ctx.api).get(`/admin/api/suppressions?account=${tenant.account.id}&after=${page.body.next}`);
    expect(rest.body).toMatchObject({ suppressions: [expect.objectContaining({ email: 'angry@example.org' })], next: null });

    const listed = () => asAdmin(ctx.api).get(`/admin/api/suppressions?account=${tenant.account.id}`);
    expect((await asAdmin(ctx.api).delete(`/admin/api/suppressions/${page.body.suppressions[0].id}`)).body).toEqual({ ok: true });
    expect((await listed()).body.suppressions.map((s: { email: string }) => s.email)).toEqual(['angry@example.org']);
    expect((await asAdmin(ctx.api).delete(`/admin/api/suppressions/${page.body.suppressions[0].id}`)).status).toBe(404);
    expect((await asAdmin(ctx.api).get('/admin/api/suppressions')).status).toBe(400);

    await db().stopEntry.createMany({ data: [{ accountId: tenant.account.id, kind: 'domain', value: 'rival.example' }, { accountId: tenant.account.id, kind: 'email', value: 'no@example.org' }] });
    const stop = await asAdmin(ctx.api).get(`/admin/api/stop-list?account=${tenant.account.id}`);
    expect(stop.body.entries.map((e: { kind: string; value: string }) => `${e.kind}:${e.value}`)).toEqual(['domain:rival.example', 'email:no@example.org']);
    expect((await asAdmin(ctx.api).delete(`/admin/api/stop-list/${stop.body.entries[0].id}`)).status).toBe(200);
    expect(await db().stopEntry.count({ where: { accountId: tenant.account.id } })).toBe(1);
  });

  it('POST /admin/api/mailboxes/:id/test tries SMTP with the login: 200 with the outcome inside, no secret echoed', async () => {
    const sink = await new SmtpSink({ user: 'ann', pass: 'pw-123' }).start();
    try {
      const account = (await makeTenant()).account;
      const good = await makeMailbox(account.id, { smtp: sink.url });
      const res = await asAdmin(ctx.api).post(`/admin/api/mailboxes/${good.id}/test`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ok: true, smtp: { ok: true, message: expect.stringMatching(/accepted the connection and the login/) }, imap: null });
      const bad = await makeMailbox(account.id, { smtp: sink.url.replace('pw-123', 'wrong-pw') });
      const refused = await asAdmin(ctx.api).post(`/admin/api/mailboxes/${bad.id}/test`);
      expect(refused.status).toBe(200);
      expect(refused.body.smtp.ok).toBe(false);
      expect(JSON.stringify(refused.body)).not.toContain('wrong-pw');
      expect((await asAdmin(ctx.api).post('/admin/api/mailboxes/999999/test')).status).toBe(404);
    } finally {
      await sink.stop();
    }
  });
});

describe('npm run admin -- (the same control plane from a shell)', () => {
  it('names the flags in its refusals', async () => {
    const missing = await runAdmin('mailbox', 'create', '--address', 'a@acme.test', '--smtp', 'smtp://127.0.0.1:25');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/--account is required/);
    const badLimit = await runAdmin('mailbox', 'set', '1', '--daily-limit', 'lots');
    expect(badLimit.err).toMatch(/--daily-limit must be a number/);
    const badId = await runAdmin('mailbox', 'set', 'abc', '--daily-limit', '5');
    expect(badId.err).toMatch(/the ID after the command must be a number/);
    // a list is named by id or key (docs/lists.md), so a word is looked up as a key
    const unknownList = await runAdmin('list', 'set', 'abc', '--name', 'X');
    expect(unknownList.code).toBe(1);
    expect(JSON.parse(unknownList.err).error).toBe('no list with id or key "abc"');
  }, 120_000);

  it('pages subscribers, exports them as CSV, and lists and removes suppressions', async () => {
    const tenant = await makeTenant();
    const list = await makeList(tenant.account.id, tenant.mailbox.id);
    await db().subscriber.createMany({ data: [{ listId: list.id, email: 'a@example.org', status: 'active' }, { listId: list.id, email: 'b@example.org', status: 'pending' }] });
    const page = await runAdmin('subscribers', String(list.id), '--status', 'pending');
    expect(page.code).toBe(0);
    expect(page.out.subscribers.map((s: { email: string }) => s.email)).toEqual(['b@example.org']);
    const csv = runTs('scripts/admin.ts', ['subscribers', 'export', String(list.id)]);
    expect(await csv.exited).toBe(0);
    expect(csv.stdout().trim().split('\r\n')).toEqual(['email,name,status,tags,fields,consent_source,consent_at,created_at,confirmed_at', expect.stringMatching(/^a@example\.org,,active,/), expect.stringMatching(/^b@example\.org,,pending,/)]);
    await db().$transaction((tx) => suppressAddress(tx, tenant.account.id, 'c@example.org', 'bounced'));
    const listed = await runAdmin('suppressions', '--account', String(tenant.account.id));
    expect(listed.out.suppressions).toEqual([expect.objectContaining({ email: 'c@example.org', reason: 'bounced' })]);
    expect((await runAdmin('suppressions', 'remove', String(listed.out.suppressions[0].id))).code).toBe(0);
    expect(await db().suppression.count({ where: { accountId: tenant.account.id } })).toBe(0);
  }, 120_000);
});
