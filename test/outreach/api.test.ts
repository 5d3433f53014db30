import { db } from '../../apps/core/src/db';
import { as, useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';

const ctx = useApi();

async function tenantWithCampaign(options: Parameters<typeof makeCampaign>[2] = {}) {
  const tenant = await makeTenant({ prospects: true });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, options);
  return { tenant, campaign, client: as(ctx.api, tenant.token) };
}

describe('GET /api/v1/campaigns', () => {
  it('lists the key account\'s campaigns with id, name, goal, status, prospect count and stages', async () => {
    const { tenant, campaign, client } = await tenantWithCampaign({ name: 'Guest posts', goal: 'links', stages: ['contacted', 'talking', 'won'] });
    await makeCampaign(tenant.account.id, tenant.mailbox.id, { name: 'Second', goal: 'sales', status: 'paused' });
    await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'a@x.org' }, { email: 'b@x.org' }] });
    const other = await makeTenant({ prospects: true });
    await makeCampaign(other.account.id, other.mailbox.id, { name: 'Not yours' });

    const res = await client.get('/api/v1/campaigns');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      campaigns: [
        { id: campaign.id, name: 'Guest posts', goal: 'links', status: 'draft', prospects: 2, stages: ['contacted', 'talking', 'won'] },
        { id: expect.any(Number), name: 'Second', goal: 'sales', status: 'paused', prospects: 0, stages: [] },
      ],
    });
  });

  it('answers an empty list for an account without campaigns, and 405 for other methods', async () => {
    const tenant = await makeTenant({ prospects: true });
    const res = await as(ctx.api, tenant.token).get('/api/v1/campaigns');
    expect(res.body).toEqual({ ok: true, campaigns: [] });
    const post = await as(ctx.api, tenant.token).post('/api/v1/campaigns').send({ name: 'x' });
    expect(post.status).toBe(405);
    expect(post.body.ok).toBe(false);
  });

  it('answers 403 for a key without the prospects permission', async () => {
    const tenant = await makeTenant({ prospects: false });
    const res = await as(ctx.api, tenant.token).get('/api/v1/campaigns');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/prospects permission/) });
  });
});

describe('POST /api/v1/prospects', () => {
  it('answers every result with counts, ids and contacts in input order', async () => {
    const { tenant, campaign, client } = await tenantWithCampaign();
    await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'stop@x.org' } });
    await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'old@x.org', name: 'Old' }, { email: 'same@x.org', name: 'Same' }] });

    const res = await client.post('/api/v1/prospects').send({
      campaign: campaign.id,
      prospects: [
        { email: 'New@X.org', name: 'New' },
        { email: 'OLD@x.org', name: 'Older', fields: { company: 'Acme' } },
        { email: 'same@x.org', name: 'Same' },
        { email: 'stop@X.org' },
        { email: 'not an address' },
        { site: 'https://www.Example.com/about' },
        {},
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      campaign: campaign.id,
      added: 2,
      updated: 1,
      same: 1,
      stopped: 1,
      invalid: 2,
      prospects: [
        { contact: 'new@x.org', result: 'added', id: expect.any(Number) },
        { contact: 'old@x.org', result: 'updated', id: expect.any(Number) },
        { contact: 'same@x.org', result: 'same', id: expect.any(Number) },
        { contact: 'stop@x.org', result: 'stopped', id: expect.any(Number) },
        { contact: 'not an address', result: 'invalid', id: null, error: 'neither a valid address nor a site' },
        { contact: 'example.com', result: 'added', id: expect.any(Number) },
        { contact: '', result: 'invalid', id: null, error: 'neither a valid address nor a site' },
      ],
    });
    const old = await db().prospect.findUniqueOrThrow({ where: { id: res.body.prospects[1].id } });
    expect(old).toMatchObject({ name: 'Older', fields: { company: 'Acme' }, email: 'old@x.org' });
    const site = await db().prospect.findUniqueOrThrow({ where: { id: res.body.prospects[5].id } });
    expect(site).toMatchObject({ email: null, site: 'example.com' });
  });

  it('handles duplicates inside one request: the second meets the first', async () => {
    const { campaign, client } = await tenantWithCampaign();
    const res = await client.post('/api/v1/prospects').send({
      campaign: campaign.id,
      prospects: [{ email: 'dup@x.org', name: 'Dup' }, { email: 'DUP@x.org', name: 'Dup' }, { email: 'dup@x.org', name: 'Dupe' }, { site: 'x.org' }, { site: 'http://www.x.org/' }],
    });
    expect(res.body.prospects.map((p: { result: string }) => p.result)).toEqual(['added', 'same', 'updated', 'added', 'same']);
    const ids = new Set(res.body.prospects.slice(0, 3).map((p: { id: number }) => p.id));
    expect(ids.size).toBe(1);
    expect(res.body.prospects[4].id).toBe(res.body.prospects[3].id);
    expect(await db().prospect.count({ where: { campaignId: campaign.id } })).toBe(2);
  });

  it('stores names and fields exactly, whatever characters they hold, and a later request sees them as stored', async () => {
    const { campaign, client } = await tenantWithCampaign();
    const awkward = { quote: 'say "hi", {x}', slash: 'a\\b', comma: 'a,b;c', unicode: 'Zoë 😀 ü', nested: 'NULL', empty: '' };
    const added = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'odd@x.org', name: 'O\'Neil, "Jr" {1}', fields: awkward }] });
    expect(added.body.prospects[0].result).toBe('added');
    const row = await db().prospect.findUniqueOrThrow({ where: { id: added.body.prospects[0].id } });
    expect(row).toMatchObject({ name: 'O\'Neil, "Jr" {1}', fields: awkward, status: 'new', nextAt: null });
    const same = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'odd@x.org', name: 'O\'Neil, "Jr" {1}', fields: awkward }] });
    expect(same.body.prospects[0]).toMatchObject({ result: 'same', id: row.id });
  });

  it('matches a site-only prospect by its normalised host and completes it with an address later', async () => {
    const { campaign, client } = await tenantWithCampaign({ status: 'running', steps: [{ subject: 's', body: 'b', delay_hours: 1 }] });
    const first = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ site: 'HTTPS://WWW.Blog.Example.org:8080/x?y' }] });
    expect(first.body.prospects[0]).toMatchObject({ contact: 'blog.example.org', result: 'added' });
    expect((await db().prospect.findUniqueOrThrow({ where: { id: first.body.prospects[0].id } })).status).toBe('hold');
    const again = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ site: 'blog.example.org' }] });
    expect(again.body.prospects[0]).toEqual({ contact: 'blog.example.org', result: 'same', id: first.body.prospects[0].id });
    const withEmail = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'ed@blog.example.org', site: 'blog.example.org' }] });
    expect(withEmail.body.prospects[0]).toEqual({ contact: 'ed@blog.example.org', result: 'updated', id: first.body.prospects[0].id });
    const row = await db().prospect.findUniqueOrThrow({ where: { id: first.body.prospects[0].id } });
    expect(row).toMatchObject({ email: 'ed@blog.example.org', status: 'ready' });
    expect(row.nextAt!.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('answers stopped for stop-listed domains, including subdomains and site-only prospects', async () => {
    const { tenant, campaign, client } = await tenantWithCampaign();
    await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'blocked.com', kind: 'domain' } });
    const res = await client.post('/api/v1/prospects').send({
      campaign: campaign.id,
      prospects: [{ email: 'anyone@blocked.com' }, { email: 'x@mail.blocked.com' }, { site: 'www.blocked.com' }, { email: 'ok@fine.com' }],
    });
    expect(res.body).toMatchObject({ stopped: 3, added: 1 });
    const stopped = await db().prospect.findUniqueOrThrow({ where: { id: res.body.prospects[0].id } });
    expect(stopped).toMatchObject({ status: 'lost', reason: 'stopped' });
  });

  it('does not close a site-only prospect because a stop-listed address of its site was added', async () => {
    const { tenant, campaign, client } = await tenantWithCampaign();
    await db().stopEntry.create({ data: { accountId: tenant.account.id, value: 'boss@acme.org' } });
    const site = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ site: 'acme.org' }] });
    const res = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'boss@acme.org', site: 'acme.org' }] });
    expect(res.body.prospects[0]).toEqual({ contact: 'boss@acme.org', result: 'stopped', id: expect.any(Number) });
    expect(res.body.prospects[0].id).not.toBe(site.body.prospects[0].id);
    expect(await db().prospect.findUniqueOrThrow({ where: { id: site.body.prospects[0].id } })).toMatchObject({ status: 'new', email: null });
  });

  it('sets the starting status by campaign status: new in draft and paused, ready or hold when running', async () => {
    const { tenant, client } = await tenantWithCampaign();
    const steps = [{ subject: 's', body: 'b', delay_hours: 2 }];
    const draft = await makeCampaign(tenant.account.id, tenant.mailbox.id, { steps });
    const paused = await makeCampaign(tenant.account.id, tenant.mailbox.id, { status: 'paused', steps });
    const running = await makeCampaign(tenant.account.id, tenant.mailbox.id, { status: 'running', steps });
    const statusOf = async (campaign: number) => {
      const res = await client.post('/api/v1/prospects').send({ campaign, prospects: [{ email: 'p@q.org' }, { site: 'q.org' }] });
      return Promise.all(res.body.prospects.map((p: { id: number }) => db().prospect.findUniqueOrThrow({ where: { id: p.id } })));
    };
    expect((await statusOf(draft.id)).map((p) => [p.status, p.nextAt])).toEqual([['new', null], ['new', null]]);
    expect((await statusOf(paused.id)).map((p) => [p.status, p.nextAt])).toEqual([['new', null], ['new', null]]);
    const [ready, hold] = await statusOf(running.id);
    expect(ready.status).toBe('ready');
    expect(Math.abs(ready.nextAt!.getTime() - (Date.now() + 2 * 3_600_000))).toBeLessThan(60_000);
    expect([hold.status, hold.nextAt]).toEqual(['hold', null]);
  });

  it('answers 400 above 100 prospects in one request, and adds none', async () => {
    const { campaign, client } = await tenantWithCampaign();
    const prospects = Array.from({ length: 101 }, (_, i) => ({ email: `p${i}@x.org` }));
    const res = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/100/) });
    expect(await db().prospect.count({ where: { campaignId: campaign.id } })).toBe(0);
    const hundred = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: prospects.slice(0, 100) });
    expect(hundred.status).toBe(200);
    expect(hundred.body.added).toBe(100);
  });

  it.each([
    ['no campaign', { prospects: [{ email: 'a@b.org' }] }],
    ['no prospects', { campaign: 1 }],
    ['prospects not an array', { campaign: 1, prospects: 'a@b.org' }],
    ['an empty prospects array', { campaign: 1, prospects: [] }],
  ])('answers 400 for a malformed request: %s', async (_what, body) => {
    const { client } = await tenantWithCampaign();
    const res = await client.post('/api/v1/prospects').send(body);
    expect(res.status).toBe(400);
    expect(res.body.ok).toBe(false);
    expect(typeof res.body.error).toBe('string');
  });

  it('answers a bad item alone as invalid, with its reason, whether it has an email, a site or neither', async () => {
    const { campaign, client } = await tenantWithCampaign();
    const long = 'x'.repeat(10_001);
    const res = await client.post('/api/v1/prospects').send({
      campaign: campaign.id,
      prospects: [
        { email: 'fine@x.org', fields: { note: 'x'.repeat(10_000) } },
        { email: 'long@x.org', fields: { note: long } },
        { site: 'long.example.org', fields: { note: long } },
        { fields: { note: long } },
        { email: 'named@x.org', name: 'n'.repeat(201) },
        { email: 'typed@x.org', fields: 'x' },
        { email: 'extra@x.org', colour: 'red' },
        'not an object',
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ added: 1, invalid: 7 });
    expect(res.body.prospects).toEqual([
      { contact: 'fine@x.org', result: 'added', id: expect.any(Number) },
      { contact: 'long@x.org', result: 'invalid', id: null, error: expect.stringMatching(/^fields\.note .*10000/) },
      { contact: 'long.example.org', result: 'invalid', id: null, error: expect.stringMatching(/^fields\.note .*10000/) },
      { contact: '', result: 'invalid', id: null, error: expect.stringMatching(/^fields\.note .*10000/) },
      { contact: 'named@x.org', result: 'invalid', id: null, error: expect.stringMatching(/^name .*200/) },
      { contact: 'typed@x.org', result: 'invalid', id: null, error: expect.stringMatching(/^fields/) },
      { contact: 'extra@x.org', result: 'invalid', id: null, error: expect.stringMatching(/colour/) },
      { contact: '', result: 'invalid', id: null, error: expect.any(String) },
    ]);
    // only the good item was stored
    expect((await db().prospect.findMany({ where: { campaignId: campaign.id } })).map((p) => p.email)).toEqual(['fine@x.org']);
  });

  it('answers 404 for an unknown campaign and for another account\'s campaign', async () => {
    const { client } = await tenantWithCampaign();
    const other = await tenantWithCampaign();
    for (const campaign of [999_999, other.campaign.id]) {
      const res = await client.post('/api/v1/prospects').send({ campaign, prospects: [{ email: 'a@b.org' }] });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/campaign/) });
    }
    expect(await db().prospect.count({ where: { campaignId: other.campaign.id } })).toBe(0);
  });

  it('answers 403 without the prospects permission', async () => {
    const tenant = await makeTenant({ prospects: false });
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const res = await as(ctx.api, tenant.token).post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email: 'a@b.org' }] });
    expect(res.status).toBe(403);
    expect(await db().prospect.count({ where: { campaignId: campaign.id } })).toBe(0);
  });

  it('never adds the same address twice under concurrent requests', async () => {
    const { campaign, client } = await tenantWithCampaign();
    const body = { campaign: campaign.id, prospects: Array.from({ length: 20 }, (_, i) => ({ email: `c${i}@race.org` })) };
    const answers = await Promise.all(Array.from({ length: 4 }, () => client.post('/api/v1/prospects').send(body)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.reduce((n, a) => n + a.body.added, 0)).toBe(20);
    expect(answers.reduce((n, a) => n + a.body.same, 0)).toBe(60);
    expect(await db().prospect.count({ where: { campaignId: campaign.id } })).toBe(20);
  });
});
