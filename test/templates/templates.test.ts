import { db } from '../../apps/core/src/db';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant, type Tenant } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';

/** Stored templates and layouts (docs/templates.md): the admin API, the key's read, and sends that name a template. */
const ctx = useApi();
const worker = useDelivery();
const sink = useMail({ queues: ['delivery'], concurrency: 10, delivery: worker });
const admin = () => asAdmin(ctx.api);
const send = (tenant: Tenant, body: object) => as(ctx.api, tenant.token).post('/api/v1/send').send(body);

const LAYOUT = `<html><head><style>.box { border: 1px solid #ccc } p { margin: 0 }</style></head>
<body><div class="box">{{ content }}</div><p>{{ company }} - <a href="{{ unsubscribe }}">unsubscribe</a></p></body></html>`;

async function layoutAndTemplate(tenant: Tenant, extra: Record<string, unknown> = {}) {
  const layout = await admin().post('/admin/api/templates').send({ account: tenant.account.id, kind: 'layout', name: 'Brand', alias: `brand-${tenant.account.id}`, html: LAYOUT });
  expect(layout.status).toBe(201);
  const template = await admin()
    .post('/admin/api/templates')
    .send({
      account: tenant.account.id,
      name: 'Welcome',
      alias: 'welcome',
      subject: 'Welcome, {{ name }} & friends',
      html: '<p>Hello {{ name }}, your plan is {{ plan }}.</p>{% if trial %}<p>Trial ends {{ trial }}.</p>{% endif %}',
      layout: layout.body.template.id,
      required: ['name', 'plan'],
      ...extra,
    });
  expect(template.status).toBe(201);
  return { layout: layout.body.template, template: template.body.template };
}

const countTemplates = async (account: number) => db().template.count({ where: { accountId: account } });

describe('templates through the admin API', () => {
  it('stores a layout and a template (version 1), lists, reads and answers the key its own account\'s only', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const { layout, template } = await layoutAndTemplate(tenant);
    expect(template).toMatchObject({ account: tenant.account.id, kind: 'template', alias: 'welcome', layout: layout.id, required: ['name', 'plan'], version: 1, inline_css: true, text_from_html: true });
    expect((await admin().get(`/admin/api/templates/${template.id}`)).body.template).toEqual(template);
    const listed = await admin().get(`/admin/api/templates?account=${tenant.account.id}&kind=layout`);
    expect(listed.body.templates.map((t: { id: number }) => t.id)).toEqual([layout.id]);

    const other = await makeTenant();
    await layoutAndTemplate(other);
    const read = await as(ctx.api, tenant.token).get('/api/v1/templates');
    expect(read.status).toBe(200);
    expect(read.body.templates.map((t: { id: number }) => t.id).sort()).toEqual([layout.id, template.id].sort());
  });

  it('refuses what would not render, storing nothing: a syntax error (400 naming the line), a layout without {{ content }}, another account\'s layout, an alias taken', async () => {
    const tenant = await makeTenant();
    const other = await makeTenant();
    const { layout: foreign } = await layoutAndTemplate(other);
    const before = await countTemplates(tenant.account.id);
    const base = { account: tenant.account.id, name: 'Bad', subject: 'Hi' };

    const syntax = await admin().post('/admin/api/templates').send({ ...base, html: '<p>one</p>\n<p>two</p>\n{% if name %}<p>never closed</p>' });
    expect(syntax.status).toBe(400);
    expect(syntax.body.error).toMatch(/html: .*line 3/);
    const filter = await admin().post('/admin/api/templates').send({ ...base, text: 'Hi {{ name | shout }}' });
    expect(filter.status).toBe(400);
    expect(filter.body.error).toMatch(/shout/);

    const noSlot = await admin().post('/admin/api/templates').send({ ...base, kind: 'layout', html: '<html><body>{{ contents }}</body></html>' });
    expect(noSlot.status).toBe(400);
    expect(noSlot.body.error).toMatch(/\{\{ content \}\}/);

    const theirs = await admin().post('/admin/api/templates').send({ ...base, html: '<p>x</p>', layout: foreign.id });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error).toMatch(/layout: no layout/);

    await layoutAndTemplate(tenant);
    const taken = await admin().post('/admin/api/templates').send({ ...base, html: '<p>x</p>', alias: 'welcome' });
    expect(taken.status).toBe(409);
    expect(await countTemplates(tenant.account.id)).toBe(before + 2);

    const { template } = await layoutAndTemplate(await makeTenant());
    const badPatch = await admin().patch(`/admin/api/templates/${template.id}`).send({ html: '{% for x in %}' });
    expect(badPatch.status).toBe(400);
    expect((await db().template.findUniqueOrThrow({ where: { id: template.id } })).version).toBe(1);
  });

  it('keeps each change as a version (the last 20), restores one as the next, and refuses to delete a layout in use', async () => {
    const tenant = await makeTenant();
    const { layout, template } = await layoutAndTemplate(tenant);
    const changed = await admin().patch(`/admin/api/templates/${template.id}`).send({ subject: 'Second {{ name }}' });
    expect(changed.body.template).toMatchObject({ version: 2, subject: 'Second {{ name }}' });
    const restored = await admin().post(`/admin/api/templates/${template.id}/restore`).send({ version: 1 });
    expect(restored.body.template).toMatchObject({ version: 3, subject: 'Welcome, {{ name }} & friends' });
    const versions = await admin().get(`/admin/api/templates/${template.id}/versions`);
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    for (let i = 0; i < 20; i++) await admin().patch(`/admin/api/templates/${template.id}`).send({ name: `Welcome ${i}` }).expect(200);
    const kept = (await admin().get(`/admin/api/templates/${template.id}/versions`)).body.versions;
    expect(kept).toHaveLength(20);
    expect(kept[0].version).toBe(23);
    expect((await admin().post(`/admin/api/templates/${template.id}/restore`).send({ version: 1 })).status).toBe(404);

    const inUse = await admin().delete(`/admin/api/templates/${layout.id}`);
    expect(inUse.status).toBe(409);
    await admin().delete(`/admin/api/templates/${template.id}`).expect(200);
    await admin().delete(`/admin/api/templates/${layout.id}`).expect(200);
    expect(await countTemplates(tenant.account.id)).toBe(0);
  });

  it('previews with variables ({ok, subject, html, text}) and refuses a missing required variable with 422 naming it', async () => {
    const tenant = await makeTenant();
    const { template } = await layoutAndTemplate(tenant);
    const preview = await admin().post(`/admin/api/templates/${template.id}/preview`).send({ variables: { name: '<Ann>', plan: 'Pro', company: 'Acme' } });
    expect(preview.status).toBe(200);
    expect(preview.body).toEqual({ ok: true, subject: 'Welcome, <Ann> & friends', html: expect.any(String), text: expect.any(String) });
    expect(preview.body.html).toContain('<div class="box" style="border: 1px solid #ccc;"><p style="margin: 0;">Hello &lt;Ann&gt;, your plan is Pro.</p></div>');
    expect(preview.body.text).toContain('Hello <Ann>, your plan is Pro.');
    const missing = await admin().post(`/admin/api/templates/${template.id}/preview`).send({ variables: { name: 'Ann' } });
    expect(missing.status).toBe(422);
    expect(missing.body.error).toMatch(/"plan"/);
    expect((await admin().post(`/admin/api/templates/${template.id}/preview`).send({ variables: [1, 2] })).status).toBe(400);
  });

  it('sends one test email to an address', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const { template } = await layoutAndTemplate(tenant);
    const res = await admin().post(`/admin/api/templates/${template.id}/test`).send({ to: 'tester@example.org', variables: { name: 'Tess', plan: 'Free' } });
    expect(res.status).toBe(202);
    await waitFor(() => sink.to('tester@example.org').length === 1, { what: 'the test email' });
    expect(sink.to('tester@example.org')[0]!.parsed.subject).toBe('Welcome, Tess & friends');
  });
});

describe('POST /api/v1/send with a template', () => {
  it('arrives rendered, in its layout with CSS inlined, html escaped, the subject raw, and a text part made from the html', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    await layoutAndTemplate(tenant);
    const res = await send(tenant, { to: 'reader@example.org', template: 'welcome', variables: { name: 'Ann <ann@x>', plan: 'Pro & more', trial: 'soon', company: 'Acme', unsubscribe: 'https://acme.example/u?a=1&b=2' } });
    expect(res.status).toBe(202);
    await waitFor(() => sink.to('reader@example.org').length === 1, { what: 'the rendered email' });
    const mail = sink.to('reader@example.org')[0]!.parsed;
    expect(mail.subject).toBe('Welcome, Ann <ann@x> & friends');
    expect(mail.html).toContain('<p style="margin: 0;">Hello Ann &lt;ann@x&gt;, your plan is Pro &amp; more.</p><p style="margin: 0;">Trial ends soon.</p>');
    expect(mail.html).toContain('href="https://acme.example/u?a=1&amp;b=2"');
    expect(mail.text).toContain('Hello Ann <ann@x>, your plan is Pro & more.');
    expect(mail.text).toContain('unsubscribe (https://acme.example/u?a=1&b=2)');
  });

  it('goes out html only, with no text part, when the template says text_from_html: false; CSS stays in <style> with inline_css: false', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const made = await admin()
      .post('/admin/api/templates')
      .send({ account: tenant.account.id, name: 'Bare', alias: 'bare', subject: 'Bare {{ n }}', html: '<style>p { color: red }</style><p>n is {{ n }}</p>', text_from_html: false, inline_css: false });
    expect(made.status).toBe(201);
    expect((await send(tenant, { to: 'bare@example.org', template: 'bare', variables: { n: 7 } })).status).toBe(202);
    await waitFor(() => sink.to('bare@example.org').length === 1, { what: 'the html-only email' });
    const mail = sink.to('bare@example.org')[0]!.parsed;
    expect(mail.html).toContain('<style>p { color: red }</style><p>n is 7</p>');
    expect(sink.to('bare@example.org')[0]!.raw.toString('utf8')).not.toMatch(/text\/plain/i);
  });

  it('answers 422 naming an unknown template, another account\'s, a missing required variable, or a render that passes a limit; 400 for variables that are not an object; nothing is stored', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    await layoutAndTemplate(tenant);
    const other = await makeTenant();
    const { template: theirs } = await layoutAndTemplate(other);
    const loop = await admin().post('/admin/api/templates').send({ account: tenant.account.id, name: 'Loop', alias: 'loop', subject: 'x', text: '{% for a in (1..100000) %}{% for b in (1..100000) %}x{% endfor %}{% endfor %}' });
    const huge = await admin().post('/admin/api/templates').send({ account: tenant.account.id, name: 'Huge', alias: 'huge', subject: 'x', html: `{% for i in (1..5000) %}${'y'.repeat(10_000)}{% endfor %}` });
    expect([loop.status, huge.status]).toEqual([201, 201]);
    const cases: [object, number, RegExp][] = [
      [{ template: 'nope' }, 422, /template "nope": no such template/],
      [{ template: theirs.id }, 422, /no such template/],
      [{ template: 'welcome', variables: { name: 'Ann' } }, 422, /required variable "plan" is missing/],
      [{ template: 'loop' }, 422, /template "loop": .*limit/],
      [{ template: 'huge' }, 422, /template "huge": .*more than/],
      [{ template: 'welcome', variables: 'name=Ann' }, 400, /variables must be a JSON object/],
      [{ template: 'welcome', variables: { name: 'A', plan: 'B' }, subject: 'both' }, 400, /subject/],
    ];
    for (const [body, status, words] of cases) {
      const res = await send(tenant, { to: 'nobody@example.org', ...body });
      expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status, error: expect.stringMatching(words) });
    }
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
  });

  it('refuses a template whose range passes its cap when stored (400), and answers a send whose render passes a cap 422 naming it', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const stored = await admin().post('/admin/api/templates').send({ account: tenant.account.id, name: 'Sorted', alias: 'sorted', subject: 'x', text: '{% for i in (1..3000000) | sort %}{{ i }}{% endfor %}' });
    expect(stored.status).toBe(400);
    expect(stored.body.error).toMatch(/a range of more than 1000000 items/);
    expect(await countTemplates(tenant.account.id)).toBe(0);
    const byVariable = await admin().post('/admin/api/templates').send({ account: tenant.account.id, name: 'Sorted', alias: 'sorted', subject: 'x', text: '{% assign a = (1..n) | sort %}{{ a | size }}' });
    expect(byVariable.status).toBe(201);
    const res = await send(tenant, { to: 'sorted@example.org', template: 'sorted', variables: { n: 500_000 } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatch(/template "sorted": .*a list of more than 10000 items \(sort\)/);
    expect(await db().send.count({ where: { accountId: tenant.account.id } })).toBe(0);
    expect((await send(tenant, { to: 'sorted@example.org', template: 'sorted', variables: { n: 5 } })).status).toBe(202);
  });

  it('renders from the process\'s cache without a query of its own, and a change on the admin side is seen by the next send', async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const { template } = await layoutAndTemplate(tenant);
    const cache = ctx.api.state.sending.templates;
    const loads = cache.loads;
    for (let i = 0; i < 5; i++) expect((await send(tenant, { to: `cached${i}@example.org`, template: 'welcome', variables: { name: `N${i}`, plan: 'P' } })).status).toBe(202);
    expect(cache.loads - loads).toBe(1);

    await admin().patch(`/admin/api/templates/${template.id}`).send({ subject: 'Changed for {{ name }}' }).expect(200);
    expect((await send(tenant, { to: 'changed@example.org', template: 'welcome', variables: { name: 'Cy', plan: 'P' } })).status).toBe(202);
    await waitFor(() => sink.to('changed@example.org').length === 1, { what: 'the email after the change' });
    expect(sink.to('changed@example.org')[0]!.parsed.subject).toBe('Changed for Cy');
    expect(cache.loads - loads).toBe(2);
  });
});
