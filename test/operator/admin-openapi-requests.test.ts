import Ajv from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox } from '../helpers/factories';

/**
 * The request side of the published admin document (GET /admin/api/openapi.json), as /api/v1's is checked
 * (openapi-requests.test.ts): bodies the server takes (welcome steps, campaign steps and broadcasts, written out or
 * on a stored template) are valid per the document, and what the document forbids the server refuses.
 */
const ctx = useApi();
let doc: { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: object }> } }>>; components: object };

const schemaOf = (method: string, path: string) => ({ ...doc.paths[path]![method]!.requestBody!.content['application/json']!.schema, components: doc.components });

function validator() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

beforeAll(async () => {
  doc = (await asAdmin(ctx.api).get('/admin/api/openapi.json').expect(200)).body;
});

it('the admin document accepts the bodies the server accepts: steps and broadcasts written out or on a template, a null template', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const template = await asAdmin(ctx.api).post('/admin/api/templates').send({ account: account.id, name: 'Welcome', alias: 'welcome-62', subject: 'Hi {{ name }}', text: 'Hello {{ name }}' });
  expect(template.status).toBe(201);
  const list = { account: account.id, name: 'News', confirm: false, mailbox: mailbox.id };
  const cases: [string, string, Record<string, unknown>, (body: Record<string, unknown>) => Record<string, unknown>][] = [
    ['post', '/lists', { ...list, steps: [{ subject: 'Welcome', text: 'Hi', delay_hours: 0 }, { template: 'welcome-62', delay_hours: 24 }, { subject: 'Later', html: '<p>x</p>', template: null, delay_hours: 48.5 }] }, (b) => b],
    ['post', '/campaigns', { account: account.id, name: 'Guests', goal: 'plain', mailbox: mailbox.id, steps: [{ subject: 'Hello', body: 'Hi {{name}}', delay_hours: 0 }, { template: template.body.template.id, delay_hours: 72 }] }, (b) => b],
    ['post', '/broadcasts', { list: '', subject: 'News', text: 'Hi' }, (b) => b],
    ['post', '/broadcasts', { list: '', template: 'welcome-62' }, (b) => b],
    ['post', '/broadcasts', { list: '', subject: 'Letter', html: '<p>Hi</p>', template: null, tags: ['vip'] }, (b) => b],
  ];
  const ajv = validator();
  let listKey = '';
  for (const [method, path, written] of cases) {
    const body = path === '/broadcasts' ? { ...written, list: listKey } : written;
    const valid = ajv.validate(schemaOf(method, path), body);
    expect({ path, body, valid, errors: ajv.errorsText() }).toEqual({ path, body, valid: true, errors: 'No errors' });
    const res = await asAdmin(ctx.api)[method as 'post'](`/admin/api${path}`).send(body);
    expect({ path, body, status: res.status, error: res.body.error }).toEqual({ path, body, status: 201, error: undefined });
    if (path === '/lists') listKey = res.body.list.key;
  }
});

it('bodies the admin document forbids are refused by the server with 400', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id);
  const cases: [string, Record<string, unknown>][] = [
    // a step with neither a subject nor a template
    ['/lists', { account: account.id, name: 'N', confirm: false, mailbox: mailbox.id, steps: [{ text: 'Hi', delay_hours: 0 }] }],
    ['/campaigns', { account: account.id, name: 'C', goal: 'plain', mailbox: mailbox.id, steps: [{ body: 'Hi', delay_hours: 0 }] }],
    ['/campaigns', { account: account.id, name: 'C', goal: 'plain', mailbox: mailbox.id, steps: [{ subject: 'S', body: 'Hi', delay_hours: -1 }] }],
    ['/broadcasts', { list: 'some-list', text: 'Hi' }],
    ['/broadcasts', { list: 'some-list', subject: 'S', text: 'Hi', template: 1.5 }],
  ];
  const ajv = validator();
  for (const [path, body] of cases) {
    expect({ path, body, valid: ajv.validate(schemaOf('post', path), body) }).toEqual({ path, body, valid: false });
    const res = await asAdmin(ctx.api).post(`/admin/api${path}`).send(body);
    expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
  }
});

it('no schema in the admin document is one no value can pass (an empty oneOf pair, null beside alternatives)', () => {
  const text = JSON.stringify(doc);
  expect(text).not.toContain('"oneOf":[{},{}]');
  expect(text).not.toMatch(/"anyOf":\[[^\]]*\],"type":"null"/);
});
