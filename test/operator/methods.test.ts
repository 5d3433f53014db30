import request from 'supertest';
import { useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/** RFC 9110 15.5.6: a known path with another method answers 405, with Allow naming the methods it takes. */
const ctx = useApi();

it.each([
  ['put', '/api/v1/send', 'POST'],
  ['get', '/api/v1/send', 'POST'],
  ['delete', '/api/v1/send/00000000-0000-4000-8000-000000000000', 'GET, PATCH, HEAD'],
  ['patch', '/api/v1/lists', null],
  ['put', '/api/v1/subscribers', null],
  ['patch', '/api/v1/campaigns', null],
  ['put', '/api/v1/prospects', null],
  ['get', '/mcp', 'POST'],
  ['delete', '/mcp', 'POST'],
] as const)('%s %s answers 405 JSON with Allow', async (method, path, allow) => {
  const tenant = await makeTenant({ prospects: true });
  const res = await request(ctx.api.app)[method](path).set('Authorization', `Bearer ${tenant.token}`);
  expect(res.status).toBe(405);
  expect(res.body).toEqual({ ok: false, error: expect.any(String) });
  const given = String(res.headers.allow ?? '');
  expect(given).not.toBe('');
  if (allow) expect(given).toBe(allow);
  // what Allow names is really taken: none of its methods is the one refused
  expect(given.split(', ')).not.toContain(method.toUpperCase());
});
