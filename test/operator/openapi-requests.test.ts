import Ajv from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { makeCampaign, makeList, makeTenant } from '../helpers/factories';

/**
 * The request side of /api/v1/openapi.json: bodies the server takes are valid per the document (open maps, pattern-keyed
 * maps, conditional rules), and bodies the document forbids are refused by the server too.
 */
const ctx = useApi();

async function bodySchema(path: string): Promise<Record<string, unknown>> {
  const doc = (await request(ctx.api.app).get('/api/v1/openapi.json')).body;
  return { ...doc.paths[path].post.requestBody.content['application/json'].schema, components: doc.components };
}

function validator() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

it('the document accepts what the server accepts: metadata, custom headers, subscriber fields, prospect fields, an outcome without url or reason', async () => {
  const tenant = await makeTenant({ prospects: true });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
  const cases: [string, Record<string, unknown>][] = [
    ['/send', { to: 'someone@example.com', subject: 'Hello', text: 'Hi there', metadata: { order: 42 }, headers: { 'X-Campaign': 'fall' } }],
    ['/subscribers', { list: list.key, email: 'reader@example.org', name: 'Reader', fields: { city: 'Oslo', visits: 3, vip: true } }],
    ['/prospects', { campaign: campaign.id, prospects: [{ email: 'pat@site.example', name: 'Pat', fields: { company: 'Site', size: 10 } }] }],
  ];
  const ajv = validator();
  for (const [path, body] of cases) {
    const valid = ajv.validate(await bodySchema(path), body);
    expect({ path, valid, errors: ajv.errorsText() }).toEqual({ path, valid: true, errors: 'No errors' });
    const res = await request(ctx.api.app).post(`/api/v1${path}`).set('Authorization', `Bearer ${tenant.token}`).send(body);
    expect({ path, status: res.status }).toEqual({ path, status: path === '/send' ? 202 : 200 });
  }
  // an outcome with a state only: valid per the document, and the server refuses it for what it is (no step went
  // out yet: 409), never for its shape
  const outcome = { campaign: campaign.id, email: 'pat@site.example', state: 'replied' };
  expect(ajv.validate(await bodySchema('/prospects/state'), outcome)).toBe(true);
  const res = await request(ctx.api.app).post('/api/v1/prospects/state').set('Authorization', `Bearer ${tenant.token}`).send(outcome);
  expect([200, 409]).toContain(res.status);
});

it('bodies the document forbids are refused by the server with 400', async () => {
  const tenant = await makeTenant({ prospects: true });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
  const cases: [string, Record<string, unknown>][] = [
    ['/send', { to: 'someone@example.com', subject: 'Hello', text: 'Hi', headers: { Subject: 'not a custom header' } }],
    ['/send', { to: 'someone@example.com', subject: 'Hello', text: 'Hi', unknown_field: 1 }],
    ['/send', { to: 'someone@example.com', subject: 'Hello' }],
    ['/send', { to: 'someone@example.com', subject: 'Hello', text: 'Hi', from: '' }],
    ['/prospects/state', { campaign: campaign.id, email: 'pat@site.example', state: 'lost' }],
    ['/prospects/state', { campaign: campaign.id, email: 'pat@site.example', state: 'replied', reason: 'price' }],
  ];
  const ajv = validator();
  for (const [path, body] of cases) {
    expect({ path, body, valid: ajv.validate(await bodySchema(path), body) }).toEqual({ path, body, valid: false });
    const res = await request(ctx.api.app).post(`/api/v1${path}`).set('Authorization', `Bearer ${tenant.token}`).send(body);
    expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
  }
});

it('every operation of the document takes a request built from it (body checked against its schema, parameters as listed)', async () => {
  const tenant = await makeTenant({ prospects: true });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id);
  const doc = (await request(ctx.api.app).get('/api/v1/openapi.json')).body as { paths: Record<string, Record<string, { parameters?: { name: string; in: string; required: boolean }[]; requestBody?: { content: Record<string, { schema: object }> } }>> };
  const sent = await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ to: 'first@example.com', subject: 'S', text: 'T' });
  await request(ctx.api.app).post('/api/v1/prospects').set('Authorization', `Bearer ${tenant.token}`).send({ campaign: campaign.id, prospects: [{ email: 'known@site.example' }] });
  // values for every body field and parameter an operation names, valid for this tenant
  const bodies: Record<string, object> = {
    'post /send': { to: 'someone@example.com', subject: 'Hello', html: '<p>Hi</p>', metadata: { a: 1 } },
    'post /send/batch': { messages: [{ to: 'someone@example.com', subject: 'Hello', text: 'Hi', idempotency_key: 'batch-message-1' }] },
    'post /subscribers': { list: list.key, email: 'every@example.org' },
    'post /prospects': { campaign: campaign.id, prospects: [{ site: 'another.example' }] },
    'post /prospects/state': { campaign: campaign.id, email: 'known@site.example', state: 'stop' },
    // no worker runs here: the send is still queued, so it can be moved, then cancelled
    'patch /send/{id}': { send_at: null },
    // addresses without a domain: answered without asking any DNS (this file runs no DNS server of its own)
    'post /verify': { emails: ['not-an-address'] },
  };
  const values: Record<string, string | number> = { id: sent.body.id, campaign: campaign.id, email: 'known@site.example', list: list.key };
  const ajv = validator();
  const seen: string[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const name = `${method} ${path}`;
      seen.push(name);
      let url = `/api/v1${path.replace(/\{(\w+)\}/g, (_m, p: string) => String(values[p]))}`;
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query' && (p.required || p.name === 'email'));
      if (method === 'delete') url += `?list=${encodeURIComponent(list.key)}&email=${encodeURIComponent('every@example.org')}`;
      else if (path === '/verify') url += '?email=not-an-address';
      else if (query.length) url += '?' + query.map((p) => `${p.name}=${encodeURIComponent(String(values[p.name]))}`).join('&');
      const body = bodies[name];
      const schema = operation.requestBody?.content['application/json']?.schema;
      if (body && schema) expect({ name, valid: ajv.validate({ ...schema, components: (doc as unknown as { components: object }).components }, body), errors: ajv.errorsText() }).toEqual({ name, valid: true, errors: 'No errors' });
      const call = (request(ctx.api.app) as unknown as Record<string, (u: string) => request.Test>)[method]!(url).set('Authorization', `Bearer ${tenant.token}`);
      const res = await (body ? call.send(body) : call);
      expect({ name, status: res.status }).toEqual({ name, status: expect.any(Number) });
      expect([400, 422]).not.toContain(res.status);
      // a live key's send has no sandbox copy (test/sandbox/sandbox.test.ts reads a test key's)
      if (name === 'get /send/{id}/raw') expect(res.status).toBe(404);
      else expect(res.status).toBeLessThan(300);
    }
  }
  // every operation of the document was driven, and there are the seventeen this API has
  expect(seen.sort()).toEqual(['delete /subscribers', 'get /campaigns', 'get /inbound', 'get /lists', 'get /prospects', 'get /send/{id}', 'get /send/{id}/raw', 'get /templates', 'patch /send/{id}', 'post /prospects', 'post /prospects/state', 'post /send', 'post /send/batch', 'post /send/{id}/cancel', 'post /subscribers', 'get /verify', 'post /verify'].sort());
});

it("states the rules enforced in code: a template's required variables and PATCH send_at within 30 days (as a key sees the document), tags and trimmed strings non-empty", async () => {
  const tenant = await makeTenant();
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false });
  const made = await request(ctx.api.app).post('/admin/api/templates').set('Authorization', `Bearer ${ADMIN_TOKEN}`)
    .send({ account: tenant.account.id, name: 'Welcome', alias: 'welcome', subject: 'Hi {{ name }}', text: 'Hello {{ name }}', required: ['name'] });
  expect(made.status).toBe(201);
  const keyed = (await request(ctx.api.app).get('/api/v1/openapi.json').set('Authorization', `Bearer ${tenant.token}`).expect(200)).body;
  const schema = (method: string, path: string) => ({ ...keyed.paths[path][method].requestBody.content['application/json'].schema, components: keyed.components });
  const ajv = validator();
  const later = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
  const sent = await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send({ to: 'later@example.com', subject: 'S', text: 'T', send_at: later(2) });
  expect(sent.status).toBe(202);
  // [method, path, body, valid per the document, the server's status]
  const cases: [string, string, Record<string, unknown>, boolean, number][] = [
    ['post', '/send', { to: 'a@example.com', template: 'welcome', variables: { name: 'Ada' } }, true, 202],
    ['post', '/send', { to: 'a@example.com', template: made.body.template.id, variables: { name: 'Ada' } }, true, 202],
    ['post', '/send', { to: 'a@example.com', template: 'welcome' }, false, 422],
    ['post', '/send', { to: 'a@example.com', template: 'welcome', variables: { other: 1 } }, false, 422],
    ['patch', '/send/{id}', { send_at: later(40) }, false, 400],
    ['patch', '/send/{id}', { send_at: later(3) }, true, 200],
    ['post', '/subscribers', { list: list.key, email: 'tags@example.org', tags: ['vip', '   '] }, false, 400],
    ['post', '/subscribers', { list: '   ', email: 'trim@example.org' }, false, 400],
    ['post', '/subscribers', { list: list.key, email: 'tags@example.org', tags: ['vip'] }, true, 200],
  ];
  for (const [method, path, body, valid, status] of cases) {
    expect({ path, body, valid: ajv.validate(schema(method, path), body) }).toEqual({ path, body, valid });
    const url = `/api/v1${path.replace('{id}', sent.body.id)}`;
    const res = await (request(ctx.api.app) as unknown as Record<string, (u: string) => request.Test>)[method]!(url).set('Authorization', `Bearer ${tenant.token}`).send(body);
    expect({ path, body, status: res.status }).toEqual({ path, body, status });
  }
});
