import { db } from '../../apps/core/src/db';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addSubscriber, broadcastTenant, waitStatus } from '../broadcasts/support';
import { addProspect, deliver, outreach } from '../outreach/support';

/**
 * A campaign step and a broadcast built on the same layout render through the one renderer (docs/templates.md): the
 * same layout around each, CSS inlined the same way, each reader's values escaped in html.
 */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10, delivery: worker });
const admin = () => asAdmin(ctx.api);

const LAYOUT = '<html><head><style>.frame { padding: 8px }</style></head><body><div class="frame">{{ content }}</div><footer>Sent to {{ email }}</footer></body></html>';

async function layoutWithTemplate(account: number, alias: string, html: string, subject: string): Promise<number> {
  const layout = await admin().post('/admin/api/templates').send({ account, kind: 'layout', name: 'Shared', alias: `shared-${alias}`, html: LAYOUT });
  expect(layout.status).toBe(201);
  const template = await admin().post('/admin/api/templates').send({ account, name: alias, alias, subject, html, layout: layout.body.template.id });
  expect(template.status).toBe(201);
  return template.body.template.id;
}

it('renders a broadcast copy and a campaign step built on the same layout through the one renderer', async () => {
  // the broadcast
  const t = await broadcastTenant(sink.url);
  await layoutWithTemplate(t.account.id, 'news', '<p>Hi {{ name }} from {{ fields.city }}</p><a href="{{ unsubscribe_url }}">Leave</a>', 'News for {{ name }}');
  await addSubscriber(t.listId, 'ann@readers.org', { name: 'Ann & <Co>', fields: { city: 'Oslo' } });
  const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, template: 'news' });
  expect(created.status).toBe(201);
  expect(created.body.broadcast.template).toEqual(expect.any(Number));
  await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' }).expect(200);
  await waitStatus(created.body.broadcast.id, 'sent');
  const copy = sink.to('ann@readers.org')[0]!.parsed;
  expect(copy.subject).toBe('News for Ann & <Co>');
  expect(copy.html).toContain('<div class="frame" style="padding: 8px;"><p>Hi Ann &amp; &lt;Co&gt; from Oslo</p><a href="http://mail.test/u/');
  expect(copy.html).toContain('<footer>Sent to ann@readers.org</footer>');
  expect(copy.text).toContain('Hi Ann & <Co> from Oslo');

  // the campaign step
  const { tenant, campaign } = await outreach({ smtp: sink.url, steps: [{ subject: 'unused', body: 'unused', delay_hours: 0 }] });
  const stepTemplate = await layoutWithTemplate(tenant.account.id, 'pitch', '<p>Hi {{ name }} of {{ site }}</p>', 'An idea for {{ site }}');
  const changed = await admin().patch(`/admin/api/campaigns/${campaign.id}`).send({ steps: [{ template: 'pitch', delay_hours: 0 }] });
  expect(changed.status).toBe(200);
  expect(changed.body.campaign.steps[0]).toMatchObject({ template: stepTemplate });
  const prospect = await addProspect(tenant.account.id, campaign.id, { email: 'bo@prospects.org', name: 'Bo <Boss>', site: 'bo.example' });
  const written = await runSequenceStep(db(), prospect, 1);
  expect(written.kind).toBe('written');
  await deliver(worker.delivery, (written as { messageId: string }).messageId);
  await waitFor(() => sink.to('bo@prospects.org').length === 1, { what: 'the step' });
  const step = sink.to('bo@prospects.org')[0]!.parsed;
  expect(step.subject).toBe('An idea for bo.example');
  expect(step.html).toContain('<div class="frame" style="padding: 8px;"><p>Hi Bo &lt;Boss&gt; of bo.example</p></div>');
  expect(step.html).toContain('<footer>Sent to bo@prospects.org</footer>');
  expect(step.text).toContain('Hi Bo <Boss> of bo.example');
});

it('refuses a broadcast or a step naming another account\'s template, or a body that does not parse (400), writing nothing', async () => {
  const t = await broadcastTenant(sink.url);
  const other = await broadcastTenant(sink.url);
  await layoutWithTemplate(other.account.id, `theirs-${other.account.id}`, '<p>x</p>', 'x');
  const before = await db().broadcast.count();
  const theirs = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, template: `theirs-${other.account.id}` });
  expect(theirs.status).toBe(400);
  expect(theirs.body.error).toMatch(/template: no template/);
  const broken = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'Hi', html: '<p>{% if name %}never closed</p>' });
  expect(broken.status).toBe(400);
  expect(broken.body.error).toMatch(/html does not parse/);
  expect(await db().broadcast.count()).toBe(before);

  const { campaign } = await outreach({ smtp: sink.url });
  const step = await admin().patch(`/admin/api/campaigns/${campaign.id}`).send({ steps: [{ subject: 'Hi {{ name', body: 'x', delay_hours: 0 }] });
  expect(step.status).toBe(400);
  expect(step.body.error).toMatch(/steps\[0\]\.subject does not parse/);
  expect((await db().campaignStep.findMany({ where: { campaignId: campaign.id } })).map((s) => s.subject)).toEqual(['Hello {{name}}', 'Hello {{name}}']);
});

it('refuses a broadcast giving a template and a subject (or html, or text) with the 400 /send answers, writing nothing', async () => {
  const t = await broadcastTenant(sink.url);
  await layoutWithTemplate(t.account.id, `both-${t.account.id}`, '<p>x</p>', 'From the template');
  const before = await db().broadcast.count();
  const send = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, template: `both-${t.account.id}`, subject: 'Mine' });
  expect(send.status).toBe(400);
  expect(send.body).toEqual({ ok: false, error: 'subject: not with a template (the template gives it)' });
  const html = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, template: `both-${t.account.id}`, html: '<p>mine</p>' });
  expect(html.body).toEqual({ ok: false, error: 'html: not with a template (the template gives it)' });
  expect(await db().broadcast.count()).toBe(before);
  // POST /send answers the same body with the same refusal
  const sender = await makeTenant();
  const direct = await as(ctx.api, sender.token).post('/api/v1/send').send({ to: 'x@example.org', template: `both-${t.account.id}`, subject: 'Mine' });
  expect({ status: direct.status, body: direct.body }).toEqual({ status: 400, body: send.body });

  // a draft changed to a template and a subject at once is refused too, and stays as it was
  const draft = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'Plain', text: 'x' }).expect(201);
  const patch = await admin().patch(`/admin/api/broadcasts/${draft.body.broadcast.id}`).send({ template: `both-${t.account.id}`, subject: 'Other' });
  expect(patch.status).toBe(400);
  expect(patch.body.error).toBe('subject: not with a template (the template gives it)');
  expect(await db().broadcast.findUniqueOrThrow({ where: { id: draft.body.broadcast.id } })).toMatchObject({ subject: 'Plain', templateId: null });
});
