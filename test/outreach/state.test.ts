import { db } from '../../apps/core/src/db';
import { as, useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';

const ctx = useApi();

async function setup(options: Parameters<typeof makeCampaign>[2] = {}) {
  const tenant = await makeTenant({ prospects: true });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { stages: ['contacted', 'talking', 'won'], ...options });
  const client = as(ctx.api, tenant.token);
  const add = async (prospect: Record<string, unknown>) => {
    const res = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [prospect] });
    return res.body.prospects[0].id as number;
  };
  const report = (body: Record<string, unknown>) => client.post('/api/v1/prospects/state').send({ campaign: campaign.id, ...body });
  return { tenant, campaign, client, add, report };
}

/** A prospect one step into the sequence, as the engine leaves it. */
async function written(id: number, step = 1) {
  await db().prospect.update({ where: { id }, data: { status: 'writing', step, nextAt: new Date(Date.now() + 3_600_000) } });
}

describe('GET /api/v1/prospects (docs/api.md)', () => {
  it('answers every field with its type', async () => {
    const { campaign, client, add } = await setup();
    const id = await add({ email: 'Ann@Example.org', name: 'Ann', site: 'https://example.org', fields: { topic: 'cats' } });
    const res = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'ANN@example.org' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ok: true,
      prospect: {
        id,
        email: 'ann@example.org',
        name: 'Ann',
        site: 'example.org',
        status: 'new',
        reason: '',
        step: 0,
        // not under way: at no step yet (docs/outreach.md, branches)
        at: null,
        stage: 0,
        stage_name: 'contacted',
        value: 0,
        reply: '',
        replied_at: null,
        next_at: null,
        closed_at: null,
        link: null,
        verification: null,
      },
    });
  });

  it('finds a site-only prospect by site, with email "" and ISO timestamps', async () => {
    const { campaign, client, add, report } = await setup();
    const id = await add({ site: 'www.shop.example' });
    await add({ email: 'bob@x.org' });
    await written((await db().prospect.findFirstOrThrow({ where: { campaignId: campaign.id, email: 'bob@x.org' } })).id);
    await report({ email: 'bob@x.org', state: 'replied' });
    const res = await client.get('/api/v1/prospects').query({ campaign: campaign.id, site: 'http://shop.example/page' });
    expect(res.body.prospect).toMatchObject({ id, email: '', site: 'shop.example', name: '' });
    const bob = await client.get(`/api/v1/prospects?campaign=${campaign.id}&email=bob@x.org`);
    expect(bob.body.prospect.replied_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(bob.body.prospect.next_at).toBeNull();
  });

  it('answers stage_name "" when the campaign has no stage there', async () => {
    const { campaign, client, add } = await setup({ stages: [] });
    await add({ email: 'c@x.org' });
    const res = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'c@x.org' });
    expect(res.body.prospect.stage_name).toBe('');
  });

  it('answers 404 for an unknown prospect, an unknown campaign and another account\'s campaign', async () => {
    const { campaign, client, add } = await setup();
    await add({ email: 'd@x.org' });
    const other = await setup();
    await other.add({ email: 'd@x.org' });
    for (const query of [{ campaign: campaign.id, email: 'nobody@x.org' }, { campaign: campaign.id, site: 'nowhere.org' }, { campaign: 999_999, email: 'd@x.org' }, { campaign: other.campaign.id, email: 'd@x.org' }]) {
      const res = await client.get('/api/v1/prospects').query(query);
      expect(res.status).toBe(404);
      expect(res.body.ok).toBe(false);
    }
  });

  it('answers 400 without email or site, or without campaign', async () => {
    const { campaign, client } = await setup();
    expect((await client.get('/api/v1/prospects').query({ campaign: campaign.id })).status).toBe(400);
    expect((await client.get('/api/v1/prospects').query({ email: 'a@b.org' })).status).toBe(400);
    expect((await client.get('/api/v1/prospects').query({ campaign: 'x', email: 'a@b.org' })).status).toBe(400);
  });

  it('answers 403 without the prospects permission', async () => {
    const tenant = await makeTenant({ prospects: false });
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const res = await as(ctx.api, tenant.token).get('/api/v1/prospects').query({ campaign: campaign.id, email: 'a@b.org' });
    expect(res.status).toBe(403);
  });
});

describe('POST /api/v1/prospects/state (docs/api.md)', () => {
  it('replied stops the sequence once a step went out', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'r@x.org' });
    await written(id);
    const res = await report({ email: 'r@x.org', state: 'replied' });
    expect(res.status).toBe(200);
    expect(res.body.prospect).toMatchObject({ id, status: 'replied', next_at: null, step: 1, replied_at: expect.any(String) });
  });

  it('answers 409 when replied is reported before any step went out, and changes nothing', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'early@x.org' });
    const before = await db().prospect.findUniqueOrThrow({ where: { id } });
    const res = await report({ email: 'early@x.org', state: 'replied', value: 50 });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/no step/) });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toEqual(before);
  });

  it('agreed wins the prospect and closes it', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'a@x.org' });
    await written(id);
    const res = await report({ email: 'a@x.org', state: 'agreed', value: 250.5 });
    expect(res.body.prospect).toMatchObject({ status: 'agreed', value: 250.5, next_at: null, closed_at: expect.any(String) });
  });

  it('lost needs a reason from the list (400 otherwise) and records it', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'l@x.org' });
    expect((await report({ email: 'l@x.org', state: 'lost' })).status).toBe(400);
    const bad = await report({ email: 'l@x.org', state: 'lost', reason: 'bored' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/reason/);
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).status).toBe('new');
    const res = await report({ email: 'l@x.org', state: 'lost', reason: 'price' });
    expect(res.body.prospect).toMatchObject({ status: 'lost', reason: 'price', closed_at: expect.any(String) });
  });

  it('stop puts the address on the account stop list and closes the prospect as lost/stopped', async () => {
    const { tenant, add, report } = await setup();
    const id = await add({ email: 'Stop@X.org' });
    await written(id);
    const res = await report({ email: 'stop@x.org', state: 'stop' });
    expect(res.body.prospect).toMatchObject({ id, status: 'lost', reason: 'stopped', next_at: null });
    expect(await db().stopEntry.count({ where: { accountId: tenant.account.id, value: 'stop@x.org' } })).toBe(1);
  });

  it('stop applies to a won prospect too: it ends lost/stopped', async () => {
    const { add, report } = await setup();
    await add({ email: 'won@x.org' });
    await report({ email: 'won@x.org', state: 'agreed', value: 10 });
    const res = await report({ email: 'won@x.org', state: 'stop' });
    expect(res.status).toBe(200);
    expect(res.body.prospect).toMatchObject({ status: 'lost', reason: 'stopped', value: 10, closed_at: expect.any(String) });
  });

  it('value alone only sets the value', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'v@x.org' });
    const res = await report({ email: 'v@x.org', value: 99 });
    expect(res.status).toBe(200);
    expect(res.body.prospect).toMatchObject({ id, status: 'new', value: 99 });
  });

  it('reporting the state a prospect already has is a no-op 200', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'n@x.org' });
    await written(id);
    await report({ email: 'n@x.org', state: 'replied' });
    const first = await db().prospect.findUniqueOrThrow({ where: { id } });
    const again = await report({ email: 'n@x.org', state: 'replied' });
    expect(again.status).toBe(200);
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toEqual(first);
    await report({ email: 'n@x.org', state: 'lost', reason: 'timing' });
    const lostAgain = await report({ email: 'n@x.org', state: 'lost', reason: 'price' });
    expect(lostAgain.status).toBe(200);
    expect(lostAgain.body.prospect).toMatchObject({ status: 'lost', reason: 'timing' });
    await report({ email: 'n@x.org', state: 'stop' });
    expect((await report({ email: 'n@x.org', state: 'stop' })).status).toBe(200);
  });

  it.each([
    ['replied', 'agreed'],
    ['replied', 'lost'],
    ['lost', 'agreed'],
    ['agreed', 'lost'],
    ['agreed', 'placed'],
    ['lost', 'placed'],
  ])('answers 409 for %s on a prospect that is %s, and changes nothing', async (state, status) => {
    const { add, report } = await setup();
    const id = await add({ email: 'closed@x.org' });
    await db().prospect.update({ where: { id }, data: { status: status as 'agreed', step: 2, reason: status === 'lost' ? 'declined' : '' } });
    const before = await db().prospect.findUniqueOrThrow({ where: { id } });
    const res = await report({ email: 'closed@x.org', state, ...(state === 'lost' ? { reason: 'other' } : {}), value: 7 });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ ok: false, error: expect.stringContaining(`${state} does not apply`) });
    expect(await db().prospect.findUniqueOrThrow({ where: { id } })).toEqual(before);
  });

  it('lets a late answer move a prospect the service closed as no_reply', async () => {
    const { add, report } = await setup();
    const id = await add({ email: 'late@x.org' });
    await db().prospect.update({ where: { id }, data: { status: 'lost', reason: 'no_reply', step: 2, closedAt: new Date() } });
    const res = await report({ email: 'late@x.org', state: 'replied' });
    expect(res.body.prospect).toMatchObject({ status: 'replied', reason: '', closed_at: null });
  });

  it.each([
    ['no email', { state: 'agreed' }],
    ['an unknown state', { email: 'x@x.org', state: 'won' }],
    ['neither state nor value', { email: 'x@x.org' }],
    ['a value that is not a number', { email: 'x@x.org', value: 'lots' }],
    ['a reason without lost', { email: 'x@x.org', state: 'agreed', reason: 'price' }],
  ])('answers 400 for %s', async (_what, body) => {
    const { add, report } = await setup();
    await add({ email: 'x@x.org' });
    const res = await report(body);
    expect(res.status).toBe(400);
    expect(res.body.ok).toBe(false);
  });

  it('answers 404 for an unknown prospect or another account\'s campaign', async () => {
    const { client, report } = await setup();
    expect((await report({ email: 'ghost@x.org', state: 'agreed' })).status).toBe(404);
    const other = await setup();
    await other.add({ email: 'theirs@x.org' });
    const res = await client.post('/api/v1/prospects/state').send({ campaign: other.campaign.id, email: 'theirs@x.org', state: 'stop' });
    expect(res.status).toBe(404);
    expect(await db().stopEntry.count({ where: { value: 'theirs@x.org' } })).toBe(0);
  });

  it('answers 403 without the prospects permission', async () => {
    const tenant = await makeTenant({ prospects: false });
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const res = await as(ctx.api, tenant.token).post('/api/v1/prospects/state').send({ campaign: campaign.id, email: 'a@b.org', state: 'stop' });
    expect(res.status).toBe(403);
  });

  it('stop reaches every campaign of the account: open prospects elsewhere close, later adds answer stopped', async () => {
    const { tenant, add, report } = await setup();
    const second = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const client = as(ctx.api, tenant.token);
    await add({ email: 'everywhere@x.org' });
    const elsewhere = await client.post('/api/v1/prospects').send({ campaign: second.id, prospects: [{ email: 'everywhere@x.org' }] });
    await report({ email: 'everywhere@x.org', state: 'stop' });
    const row = await db().prospect.findUniqueOrThrow({ where: { id: elsewhere.body.prospects[0].id } });
    expect(row).toMatchObject({ status: 'lost', reason: 'stopped' });
    const third = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const later = await client.post('/api/v1/prospects').send({ campaign: third.id, prospects: [{ email: 'EVERYWHERE@x.org' }] });
    expect(later.body).toMatchObject({ stopped: 1, added: 0, prospects: [{ contact: 'everywhere@x.org', result: 'stopped' }] });
    // another account's stop list is its own
    const stranger = await setup();
    expect((await stranger.client.post('/api/v1/prospects').send({ campaign: stranger.campaign.id, prospects: [{ email: 'everywhere@x.org' }] })).body.added).toBe(1);
  });
});
