import Ajv from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import request from 'supertest';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { arbitraryOf } from '../helpers/schema-arbitrary';

/**
 * Requests generated from /api/v1/openapi.json, as a tool reading the document makes them (Schemathesis's positive
 * phase: docs/DEVELOPERS.md has its figures), are accepted by the service: the document states the rules the service
 * enforces (50 recipients, addresses joi takes, text or html, base64 attachments, 50 headers, printable
 * Idempotency-Key, send_at within 30 days, the key's `from`).
 */
const ctx = useApi();

interface Parameter {
  name: string;
  in: string;
  schema: Record<string, unknown>;
}
interface Doc {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody: { content: Record<string, { schema: Record<string, unknown> }> } }>>;
  components: Record<string, unknown>;
}

function validator(doc: Doc) {
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  const compiled = new WeakMap<object, (value: unknown) => boolean>();
  return (schema: Record<string, unknown>, value: unknown) => {
    let check = compiled.get(schema);
    if (!check) compiled.set(schema, (check = ajv.compile({ ...schema, components: doc.components })));
    return check(value);
  };
}

it('POST /send: at least 95% of the bodies and headers generated from the document (as the key sees it) are accepted, none answers 5xx', async () => {
  const tenant = await makeTenant({ daily_limit: 100_000 });
  const doc = (await request(ctx.api.app).get('/api/v1/openapi.json').set('Authorization', `Bearer ${tenant.token}`)).body as Doc;
  const operation = doc.paths['/send']!.post!;
  const valid = validator(doc);
  const body = arbitraryOf(operation.requestBody.content['application/json']!.schema, doc as unknown as Record<string, unknown>, valid);
  const headers = fc.record(
    Object.fromEntries((operation.parameters ?? []).filter((p) => p.in === 'header' && p.name !== 'Prefer').map((p) => [p.name, arbitraryOf(p.schema, {}, valid)])),
    { requiredKeys: [] },
  );
  const requests = fc.sample(fc.tuple(body, headers), { numRuns: 120, seed: 20261126 });
  const statuses: Record<number, number> = {};
  const refusals: string[] = [];
  const usedKeys = new Set<string>();
  for (const [sent, headerValues] of requests) {
    expect({ sent, valid: valid(operation.requestBody.content['application/json']!.schema, sent) }).toEqual({ sent, valid: true });
    const call = request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`);
    for (const [name, value] of Object.entries(headerValues)) {
      // a client makes each Idempotency-Key unique (docs/idempotency.md); a generator repeats short ones, and a key
      // reused with another body is rightly 422: a repeated one is left out
      if (name === 'Idempotency-Key') {
        if (usedKeys.has(String(value))) continue;
        usedKeys.add(String(value));
      }
      call.set(name, String(value));
    }
    const res = await call.send(sent as object);
    statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    if (res.status >= 300 && refusals.length < 5) refusals.push(`${res.status} ${res.body.error}: ${JSON.stringify(sent).slice(0, 300)}`);
  }
  const accepted = (statuses[200] ?? 0) + (statuses[202] ?? 0);
  expect({ statuses, refusals, fiveHundreds: Object.keys(statuses).filter((s) => Number(s) >= 500) }).toEqual({ statuses, refusals, fiveHundreds: [] });
  expect({ accepted: accepted >= requests.length * 0.95, statuses, refusals }).toEqual({ accepted: true, statuses, refusals });
}, 240_000);

it('the document a key gets names its own `from` and a send_at range; without a key the general one; a bad key is 401', async () => {
  const tenant = await makeTenant();
  const general = (await request(ctx.api.app).get('/api/v1/openapi.json')).body as Doc;
  const keyed = (await request(ctx.api.app).get('/api/v1/openapi.json').set('Authorization', `Bearer ${tenant.token}`)).body as Doc;
  const properties = (doc: Doc) => doc.paths['/send']!.post!.requestBody.content['application/json']!.schema.properties as Record<string, Record<string, unknown>>;
  expect(properties(general).send_at).toMatchObject({ type: 'string', format: 'date-time' });
  const ajv = validator(keyed);
  const from = properties(keyed).from!;
  expect([tenant.mailbox.address, `Sender <${tenant.mailbox.address}>`, 'other@example.com'].map((a) => ajv(from, a))).toEqual([true, true, false]);
  const sendAt = properties(keyed).send_at!;
  const day = 86_400_000;
  expect([-day, 27 * day, 31 * day].map((ahead) => ajv(sendAt, new Date(Date.now() + ahead).toISOString()))).toEqual([true, true, false]);
  const bad = await request(ctx.api.app).get('/api/v1/openapi.json').set('Authorization', 'Bearer msk_unknownunknownunknownunknown12');
  expect(bad.status).toBe(401);
});

it('what the document says matches what the service refuses: 51 recipients, an address with a one-label domain, no text, a bad base64, a far send_at', async () => {
  const tenant = await makeTenant();
  const doc = (await request(ctx.api.app).get('/api/v1/openapi.json').set('Authorization', `Bearer ${tenant.token}`)).body as Doc;
  const schema = doc.paths['/send']!.post!.requestBody.content['application/json']!.schema;
  const valid = validator(doc);
  const base = { to: 'someone@example.com', subject: 'Hello', text: 'Hi' };
  const cases: Record<string, unknown>[] = [
    { ...base, to: Array.from({ length: 51 }, (_, i) => `r${i}@example.com`) },
    { ...base, to: 'a@localhost' },
    { ...base, to: '0@com' },
    { ...base, text: '' },
    { ...base, attachments: [{ filename: 'a.txt', content: 'not base64!' }] },
    { ...base, headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v'])) },
    { ...base, send_at: new Date(Date.now() + 40 * 86_400_000).toISOString() },
  ];
  for (const body of cases) {
    const res = await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send(body);
    expect({ body, valid: valid(schema, body), status: res.status }).toEqual({ body, valid: false, status: 400 });
  }
  // 50 recipients: valid and accepted
  const fifty = { ...base, to: Array.from({ length: 50 }, (_, i) => `r${i}@example.com`) };
  expect(valid(schema, fifty)).toBe(true);
  expect((await request(ctx.api.app).post('/api/v1/send').set('Authorization', `Bearer ${tenant.token}`).send(fifty)).status).toBe(202);
});
