import request from 'supertest';
import { as, asAdmin, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/** Bodies that are valid JSON but not the object an endpoint expects: every one is a clear 400, never a fault. */
const ctx = useApi();
const shapes: [string, string][] = [
  ['null', 'null'],
  ['a string', '"hello"'],
  ['a number', '42'],
  ['an array', '[1,2]'],
  ['an empty object', '{}'],
  ['wrong types', '{"to":5,"subject":[],"list":{},"email":7,"campaign":"x","prospects":"y","state":9,"name":{}}'],
];

const publicCalls: [string, string][] = [
  ['post', '/api/v1/send'],
  ['post', '/api/v1/subscribers'],
  ['delete', '/api/v1/subscribers'],
  ['post', '/api/v1/prospects'],
  ['post', '/api/v1/prospects/state'],
];
const adminCalls: [string, string][] = [
  ['post', '/admin/api/accounts'],
  ['post', '/admin/api/mailboxes'],
  ['post', '/admin/api/keys'],
  ['post', '/admin/api/lists'],
  ['post', '/admin/api/campaigns'],
  ['patch', '/admin/api/campaigns/1'],
];

describe('malformed bodies answer 400 with {ok:false, error}', () => {
  let token: string;
  beforeAll(async () => {
    token = (await makeTenant({ prospects: true })).token;
  });

  it.each(publicCalls.flatMap(([method, path]) => shapes.map(([what, body]) => [method, path, what, body] as const)))(
    '%s %s with %s',
    async (method, path, _what, body) => {
      const client = as(ctx.api, token) as unknown as Record<string, (p: string) => request.Test>;
      const res = await client[method]!(path).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ ok: false, error: expect.any(String) });
    },
  );

  it.each(adminCalls.flatMap(([method, path]) => shapes.map(([what, body]) => [method, path, what, body] as const)))(
    '%s %s with %s',
    async (method, path, _what, body) => {
      const client = asAdmin(ctx.api) as unknown as Record<string, (p: string) => request.Test>;
      const res = await client[method]!(path).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ ok: false, error: expect.any(String) });
    },
  );
});
