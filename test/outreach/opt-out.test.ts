import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { prospectUnsubscribeToken } from '../../apps/core/src/outreach/opt-out';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { asAdmin, useApi } from '../helpers/api';
import { wantEvents } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { rawHeaders } from '../broadcasts/support';
import { addProspect, deliver, outreach } from './support';

/** One-click opt-out of outreach emails (RFC 8058; docs/outreach.md), checked on the wire. */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ delivery: worker });

const steps = [
  { subject: 'Hello {{name}}', body: 'Hi {{name}}\nNot interested? {{unsubscribe_url}}', delay_hours: 0 },
  { subject: 'Hello {{name}}', body: 'Any news?', delay_hours: 1 },
];

async function firstStepOut(unsubscribe?: boolean) {
  const { tenant, campaign } = await outreach({ smtp: sink.url, steps });
  if (unsubscribe !== undefined) await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ unsubscribe }).expect(200);
  const address = `reader-${campaign.id}@example.org`;
  const id = await addProspect(tenant.account.id, campaign.id, { email: address, name: 'Ann' });
  const written = await runSequenceStep(db(), id, 1);
  expect(written.kind).toBe('written');
  await deliver(worker.delivery, (written as { messageId: string }).messageId);
  const [mail] = sink.to(address);
  return { tenant, campaign, id, address, mail: mail! };
}

describe('one-click opt-out of outreach emails', () => {
  it('puts List-Unsubscribe and List-Unsubscribe-Post on each step and the same link in {{unsubscribe_url}}', async () => {
    const { id, mail } = await firstStepOut();
    const headers = rawHeaders(mail);
    const url = `http://mail.test/u/${prospectUnsubscribeToken(id)}`;
    expect(headers.get('list-unsubscribe')).toEqual([`<${url}>`]);
    expect(headers.get('list-unsubscribe-post')).toEqual(['List-Unsubscribe=One-Click']);
    expect(mail.parsed.text!.trim()).toBe(`Hi Ann\nNot interested? ${url}`);
    // the stored row holds no usable link
    expect((await db().message.findFirstOrThrow({ where: { prospectId: id } })).text).not.toContain(url);
  });

  it('one POST stop-lists the address and ends the prospect lost/unsubscribed with its event; GET changes nothing', async () => {
    const { tenant, campaign, id, address, mail } = await firstStepOut();
    await wantEvents(tenant.account.id, ['prospect.state_changed']);
    const path = rawHeaders(mail).get('list-unsubscribe')![0]!.slice(1, -1).replace('http://mail.test', '');

    const page = await request(ctx.api.app).get(path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Unsubscribe');
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).status).toBe('writing');

    const oneClick = await request(ctx.api.app).post(path).type('form').send('List-Unsubscribe=One-Click');
    expect(oneClick.status).toBe(200);
    expect(oneClick.headers.location).toBeUndefined();
    const prospect = await db().prospect.findUniqueOrThrow({ where: { id } });
    expect(prospect).toMatchObject({ status: 'lost', reason: 'unsubscribed', nextAt: null });
    expect(await db().stopEntry.findUnique({ where: { accountId_value: { accountId: tenant.account.id, value: address } } })).not.toBeNull();
    const events = await db().event.findMany({ where: { accountId: tenant.account.id, type: 'prospect.state_changed' } });
    expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ id, status: 'lost', reason: 'unsubscribed', previous: 'writing', campaign: campaign.id })]);

    // the next step never goes out, and a second click answers the same and changes nothing
    await db().prospect.update({ where: { id }, data: { status: 'writing', reason: '', nextAt: new Date(Date.now() - 1000) } });
    expect(await runSequenceStep(db(), id, 2)).toMatchObject({ kind: 'skipped', why: 'address is on the stop list' });
    expect((await request(ctx.api.app).post(path).type('form').send('List-Unsubscribe=One-Click')).status).toBe(200);
    expect((await request(ctx.api.app).get(path)).text).toMatch(/unsubscribed/i);
  });

  it('answers 404 to a forged or unknown link', async () => {
    const { id } = await firstStepOut();
    expect((await request(ctx.api.app).post(`/u/p${id}.${'A'.repeat(32)}`).type('form').send('List-Unsubscribe=One-Click')).status).toBe(404);
    expect((await request(ctx.api.app).get(`/u/p2147483000.${'A'.repeat(32)}`)).status).toBe(404);
    expect((await request(ctx.api.app).post(`/u/${prospectUnsubscribeToken(2_000_000_000)}`)).status).toBe(404);
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).status).toBe('writing');
  });

  it('leaves the headers out, and {{unsubscribe_url}} empty, when the campaign says unsubscribe: false', async () => {
    const { mail, campaign } = await firstStepOut(false);
    expect(rawHeaders(mail).has('list-unsubscribe')).toBe(false);
    expect(rawHeaders(mail).has('list-unsubscribe-post')).toBe(false);
    expect(mail.parsed.text!.trim()).toBe('Hi Ann\nNot interested?');
    expect((await asAdmin(ctx.api).get(`/admin/api/campaigns/${campaign.id}`).expect(200)).body.campaign.unsubscribe).toBe(false);
  });
});
