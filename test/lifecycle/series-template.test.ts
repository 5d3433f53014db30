import { db } from '../../apps/core/src/db';
import { maintenanceTasks } from '../../apps/worker/src/processors/maintenance';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { rawHeaders } from '../broadcasts/support';
import { confirmByLink } from '../../apps/core/src/subscribers/tokens';
import { address, confirmationMessages, listFixture, tokenOfStored } from '../lists/support';

/**
 * A welcome-series step built on a stored template (docs/lists.md): the template is resolved when the list is saved
 * and rendered for each person through the one renderer, as a broadcast on a template is (its html in its layout, the
 * person's values escaped, one-click unsubscribe).
 */
const app = useApi();
const sink = useMail({ queues: ['delivery'] });
const admin = () => asAdmin(app.api);

const LAYOUT = '<html><head><style>.frame { padding: 8px }</style></head><body><div class="frame">{{ content }}</div><footer>Sent to {{ email }}</footer></body></html>';

async function templateOnLayout(account: number, alias: string): Promise<number> {
  const layout = await admin().post('/admin/api/templates').send({ account, kind: 'layout', name: 'Frame', alias: `frame-${alias}`, html: LAYOUT });
  expect(layout.status).toBe(201);
  const template = await admin()
    .post('/admin/api/templates')
    .send({ account, name: alias, alias, subject: 'Welcome, {{ name }}', html: '<p>Hi {{ name }} from {{ fields.city }}</p><a href="{{ unsubscribe_url }}">Leave</a>', layout: layout.body.template.id });
  expect(template.status).toBe(201);
  return template.body.template.id;
}

it('a step naming a template (no subject of its own) reaches a confirmed subscriber rendered in its layout, with one-click unsubscribe', async () => {
  const f = await listFixture(app.api, { smtp: sink.url, confirm: true });
  const templateId = await templateOnLayout(f.tenant.account.id, `welcome-${f.list.id}`);
  const set = await admin()
    .patch(`/admin/api/lists/${f.list.id}`)
    .send({ steps: [{ template: `welcome-${f.list.id}`, delay_hours: 0 }, { subject: 'Day two', text: 'More for {{name}}', delay_hours: 24 }] });
  expect(set.status).toBe(200);
  expect(set.body.list.steps).toEqual([
    expect.objectContaining({ step: 1, template: templateId, html: null, text: null }),
    expect.objectContaining({ step: 2, subject: 'Day two', template: null }),
  ]);
  // the stored template is in use: it cannot be deleted from under the series
  expect((await admin().delete(`/admin/api/templates/${templateId}`)).status).toBe(409);

  const email = address('templated');
  expect((await f.subscribe({ email, name: 'Ann & <Co>', fields: { city: 'Oslo' } })).body.status).toBe('pending');
  const [confirmation] = await confirmationMessages(email);
  expect((await confirmByLink(db(), tokenOfStored(confirmation!))).result).toBe('confirmed');
  const got = await waitFor(
    async () => {
      await maintenanceTasks(db()).series();
      return sink.to(email).find((m) => m.parsed.subject === 'Welcome, Ann & <Co>');
    },
    { timeout: 20_000, interval: 200, what: 'step 1 on the wire' },
  );
  const html = got.parsed.html as string;
  expect(html).toContain('<div class="frame" style="padding: 8px;"><p>Hi Ann &amp; &lt;Co&gt; from Oslo</p><a href="http://mail.test/u/');
  expect(html).toContain(`<footer>Sent to ${email}</footer>`);
  expect(got.parsed.text).toContain('Hi Ann & <Co> from Oslo');
  const headers = rawHeaders(got);
  expect(headers.get('list-unsubscribe')).toEqual([expect.stringMatching(/^<http:\/\/mail\.test\/u\/[0-9]+\.[A-Za-z0-9_-]{32}>$/)]);
  expect(headers.get('list-unsubscribe-post')).toEqual(['List-Unsubscribe=One-Click']);
  expect(html).toContain(headers.get('list-unsubscribe')![0]!.slice(1, -1));
  expect(await db().message.count({ where: { to: email, kind: 'series' } })).toBe(1);
});

it("an unknown template, a layout or another account's template is refused (400 naming the step) and the list is unchanged", async () => {
  const f = await listFixture(app.api, { smtp: sink.url, confirm: false });
  const other = await listFixture(app.api, { smtp: sink.url, confirm: false });
  const before = await admin()
    .patch(`/admin/api/lists/${f.list.id}`)
    .send({ name: 'Kept', steps: [{ subject: 'Hi', text: 'Hello', delay_hours: 1 }] });
  expect(before.status).toBe(200);
  const theirs = await templateOnLayout(other.tenant.account.id, `theirs-${other.list.id}`);
  for (const template of ['nowhere', `theirs-${other.list.id}`, theirs, `frame-theirs-${other.list.id}`]) {
    const refused = await admin()
      .patch(`/admin/api/lists/${f.list.id}`)
      .send({ name: 'Changed', steps: [{ subject: 'Ok', text: 'ok', delay_hours: 0 }, { template, delay_hours: 0 }] });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ ok: false, error: expect.stringContaining(`steps[1].template: no template ${JSON.stringify(template)}`) });
  }
  const mine = await templateOnLayout(f.tenant.account.id, `mine-${f.list.id}`);
  // a layout of the account is not a template either
  const layout = await admin().patch(`/admin/api/lists/${f.list.id}`).send({ steps: [{ template: `frame-mine-${f.list.id}`, delay_hours: 0 }] });
  expect(layout.status).toBe(400);
  // a step without a subject needs a template
  const bare = await admin().patch(`/admin/api/lists/${f.list.id}`).send({ steps: [{ html: '<p>x</p>', delay_hours: 0 }] });
  expect(bare.status).toBe(400);
  const shown = await admin().get(`/admin/api/lists/${f.list.id}`);
  expect(shown.body.list.name).toBe('Kept');
  expect(shown.body.list.steps).toEqual([expect.objectContaining({ step: 1, subject: 'Hi', text: 'Hello', template: null, delay_hours: 1 })]);
  expect(await db().seriesStep.count({ where: { listId: f.list.id } })).toBe(1);

  // created with an unknown template: no list at all
  const lists = await db().list.count({ where: { accountId: f.tenant.account.id } });
  const created = await admin()
    .post('/admin/api/lists')
    .send({ account: f.tenant.account.id, mailbox: f.tenant.mailbox.id, name: 'New', confirm: false, steps: [{ template: 'nowhere', delay_hours: 0 }] });
  expect(created.status).toBe(400);
  expect(await db().list.count({ where: { accountId: f.tenant.account.id } })).toBe(lists);
  // and with its own template, by id
  const ok = await admin()
    .post('/admin/api/lists')
    .send({ account: f.tenant.account.id, mailbox: f.tenant.mailbox.id, name: 'New', confirm: false, steps: [{ template: mine, delay_hours: 0 }] });
  expect(ok.status).toBe(201);
  expect(ok.body.list.steps).toEqual([expect.objectContaining({ template: mine, subject: '' })]);
});
