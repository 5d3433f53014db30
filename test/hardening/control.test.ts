import { asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';

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
