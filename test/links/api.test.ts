import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { createDelivery } from '../../apps/core/src/delivery/deliver';
import { maintenanceTasks } from '../../apps/worker/src/processors/maintenance';
import { createWorkers } from '../../apps/worker/src/workers';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeTenant, wantEvents } from '../helpers/factories';
import { waitFor } from '../helpers/wait';
import { prospectRow, usePages } from './support';

// the pages are served on 127.0.0.1; placed links are checked again every 3.6 s
process.env.ALLOW_PRIVATE_FETCH = 'true';
process.env.LINK_RECHECK_HOURS = '0.001';

const ctx = useApi();
const pages = usePages();
let workers: Worker[] = [];
beforeAll(() => {
  workers = createWorkers({ db: db(), delivery: createDelivery(db(), deliveryRegistrations()), queues: ['links'], concurrency: 5 });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close()));
});

const TARGET = 'https://shop.example/products';

async function setup(goal: 'links' | 'sales' = 'links') {
  const tenant = await makeTenant({ prospects: true });
  await wantEvents(tenant.account.id);
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { goal, target: goal === 'links' ? { url: TARGET, anchor: 'shop' } : undefined });
  const client = as(ctx.api, tenant.token);
  const add = async (email: string) => {
    const res = await client.post('/api/v1/prospects').send({ campaign: campaign.id, prospects: [{ email }] });
    return res.body.prospects[0].id as number;
  };
  const report = (body: Record<string, unknown>) => client.post('/api/v1/prospects/state').send({ campaign: campaign.id, ...body });
  return { tenant, campaign, client, add, report };
}

describe('campaign target (admin API)', () => {
  it('is set on POST, changed and removed on PATCH, for links campaigns only', async () => {
    const tenant = await makeTenant();
    const admin = asAdmin(ctx.api);
    const base = { account: tenant.account.id, name: 'Links', mailbox: tenant.mailbox.id, steps: [{ subject: 'Hi', body: 'Hello', delay_hours: 0 }] };
    const created = await admin.post('/admin/api/campaigns').send({ ...base, goal: 'links', target: { url: TARGET } });
    expect(created.status).toBe(201);
    expect(created.body.campaign.target).toEqual({ url: TARGET, anchor: '' });
    const id = created.body.campaign.id;
    const changed = await admin.patch(`/admin/api/campaigns/${id}`).send({ target: { url: 'https://shop.example/', anchor: 'best shop' } });
    expect(changed.body.campaign.target).toEqual({ url: 'https://shop.example/', anchor: 'best shop' });
    expect((await admin.patch(`/admin/api/campaigns/${id}`).send({ target: null })).body.campaign.target).toBeNull();

    const sales = await admin.post('/admin/api/campaigns').send({ ...base, goal: 'sales', target: { url: TARGET } });
    expect(sales.status).toBe(400);
    expect(sales.body.error).toMatch(/only a links campaign has a target/);
    const bad = await admin.post('/admin/api/campaigns').send({ ...base, goal: 'links', target: { url: 'ftp://x.example/' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/target\.url/);
  });
});

describe('url on POST /api/v1/prospects/state', () => {
  it('with agreed: the worker checks the page, the prospect becomes placed, link.placed is written', async () => {
    const { tenant, campaign, client, add, report } = await setup();
    pages.html('/guest-post', `<article>Thanks to <a href="http://www.shop.example/products/shoes" rel="sponsored">the shop</a></article>`);
    const id = await add('editor@blog.example');
    const res = await report({ email: 'editor@blog.example', state: 'agreed', url: pages.url('/guest-post') });
    expect(res.status).toBe(200);
    expect(res.body.prospect).toMatchObject({ status: 'agreed', link: { url: pages.url('/guest-post'), found: false, href: '', anchor: '', rel: '', error: '', checked_at: null } });

    await waitFor(async () => (await prospectRow(id)).status === 'placed', { timeout: 20_000, what: 'the link check placing the prospect' });
    const shown = await client.get('/api/v1/prospects').query({ campaign: campaign.id, email: 'editor@blog.example' });
    expect(shown.body.prospect).toMatchObject({
      status: 'placed',
      link: { url: pages.url('/guest-post'), found: true, href: 'http://www.shop.example/products/shoes', anchor: 'the shop', rel: 'sponsored', error: '' },
    });
    expect(Date.parse(shown.body.prospect.link.checked_at)).toBeGreaterThan(Date.now() - 60_000);
    const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: { in: ['link.placed', 'prospect.state_changed'] } } });
    // the caller's agreed (new -> agreed), then the check's placed (agreed -> placed)
    expect(events.map((e) => e.type).sort()).toEqual(['link.placed', 'prospect.state_changed', 'prospect.state_changed']);
    expect(events.find((e) => e.type === 'link.placed')!.data).toMatchObject({ id, campaign: campaign.id, status: 'placed', link: { found: true } });
  });

  it('is re-checked every LINK_RECHECK_HOURS: a link gone twice in a row moves the prospect back to agreed', async () => {
    const { tenant, add, report } = await setup();
    pages.html('/resource-page', `<a href="https://shop.example/products">shop</a>`);
    const id = await add('links@resources.example');
    await report({ email: 'links@resources.example', state: 'agreed', url: pages.url('/resource-page') });
    await waitFor(async () => (await prospectRow(id)).status === 'placed', { timeout: 20_000, what: 'placed' });
    pages.html('/resource-page', '<p>we tidied up our links</p>');
    // the `links` maintenance task, run as its schedule would: it queues the checks that are due
    await waitFor(
      async () => {
        await maintenanceTasks(db()).links();
        return (await prospectRow(id)).status === 'agreed';
      },
      { timeout: 40_000, interval: 500, what: 'the link lost after two re-checks' },
    );
    const row = await prospectRow(id);
    expect(row).toMatchObject({ status: 'agreed', reason: 'link_removed', linkFound: false });
    const types = (await db().event.findMany({ where: { accountId: tenant.account.id }, orderBy: { createdAt: 'asc' } })).map((e) => e.type);
    expect(types).toEqual(['prospect.state_changed', 'link.placed', 'prospect.state_changed', 'link.lost', 'prospect.state_changed']);
  });

  it('alone on a placed prospect: the new page is checked; alone on a prospect not agreed or placed: 409', async () => {
    const { add, report } = await setup();
    pages.html('/first', `<a href="https://shop.example/products">shop</a>`);
    pages.html('/second', `<a href="https://shop.example/products" rel="nofollow">moved</a>`);
    const id = await add('moved@blog.example');
    await report({ email: 'moved@blog.example', state: 'agreed', url: pages.url('/first') });
    await waitFor(async () => (await prospectRow(id)).status === 'placed', { timeout: 20_000, what: 'placed' });
    const moved = await report({ email: 'moved@blog.example', url: pages.url('/second') });
    expect(moved.status).toBe(200);
    expect(moved.body.prospect).toMatchObject({ status: 'placed', link: { url: pages.url('/second'), found: false, checked_at: null } });
    await waitFor(async () => (await prospectRow(id)).linkRel === 'nofollow', { timeout: 20_000, what: 'the new page checked' });

    await add('fresh@blog.example');
    const early = await report({ email: 'fresh@blog.example', url: pages.url('/first') });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({ ok: false, error: expect.stringMatching(/agreed or placed/) });
    expect(await db().prospect.findFirstOrThrow({ where: { email: 'fresh@blog.example' } })).toMatchObject({ linkUrl: null, status: 'new' });
  });

  it('answers 400 for url with another state or a bad URL, 409 in a campaign that is not links', async () => {
    const { add, report } = await setup();
    await add('a@blog.example');
    const lost = await report({ email: 'a@blog.example', state: 'lost', reason: 'price', url: 'https://blog.example/x' });
    expect(lost.status).toBe(400);
    expect(lost.body.error).toMatch(/url goes only with state agreed/);
    expect((await report({ email: 'a@blog.example', state: 'agreed', url: 'javascript:alert(1)' })).status).toBe(400);
    expect((await db().prospect.findFirstOrThrow({ where: { email: 'a@blog.example' } })).status).toBe('new');

    const sales = await setup('sales');
    await sales.add('b@blog.example');
    const res = await sales.report({ email: 'b@blog.example', state: 'agreed', url: 'https://blog.example/x' });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatch(/links campaigns only/);
    expect((await db().prospect.findFirstOrThrow({ where: { email: 'b@blog.example' } })).status).toBe('new');
  });
});
