import { as, asAdmin, useApi } from '../helpers/api';
import { makeCampaign, makeTenant } from '../helpers/factories';

const ctx = useApi();

/** GET /admin/api/campaigns/:id/prospects: the console's pages of a campaign's prospects (operator/prospects.ts). */
describe("a campaign's prospect pages", () => {
  it('pages newest first by keyset; an empty page of a campaign is 200, of no campaign 404', async () => {
    const tenant = await makeTenant({ prospects: true });
    const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
    const admin = asAdmin(ctx.api);

    const empty = await admin.get(`/admin/api/campaigns/${campaign.id}/prospects`);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ ok: true, prospects: [], next: null });

    await as(ctx.api, tenant.token).post('/api/v1/prospects').send({ campaign: campaign.id, prospects: ['a', 'b', 'c'].map((n) => ({ email: `${n}@site.example` })) });
    const first = await admin.get(`/admin/api/campaigns/${campaign.id}/prospects?limit=2`);
    expect(first.body.prospects.map((p: { email: string }) => p.email)).toEqual(['c@site.example', 'b@site.example']);
    const second = await admin.get(`/admin/api/campaigns/${campaign.id}/prospects?limit=2&before=${first.body.next}`);
    expect(second.body).toMatchObject({ prospects: [{ email: 'a@site.example' }], next: null });
    // past the oldest: an empty page of an existing campaign
    const past = await admin.get(`/admin/api/campaigns/${campaign.id}/prospects?before=${second.body.prospects[0].id}`);
    expect(past.body).toEqual({ ok: true, prospects: [], next: null });

    const missing = await admin.get(`/admin/api/campaigns/${campaign.id + 100_000}/prospects`);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ ok: false, error: `no campaign with id ${campaign.id + 100_000}` });
  });
});
