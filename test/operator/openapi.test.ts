import request from 'supertest';
import { KeyAuthenticator } from '../../apps/api/src/middleware/auth';
import { AuthFailures } from '../../apps/api/src/middleware/failures';
import { v1Router } from '../../apps/api/src/routes/v1';
import { db } from '../../apps/core/src/db';
import { createApiState } from '../../apps/api/src/state';
import { as, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';
import { answerProblems } from '../helpers/openapi-check';

const ctx = useApi();

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
}

describe('GET /api/v1/openapi.json', () => {
  it('is served without a key as OpenAPI 3.1', async () => {
    const res = await request(ctx.api.app).get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/send'].post.responses['202'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/SendAnswer' });
    // generated from the joi schema that validates the request
    expect(res.body.paths['/send'].post.requestBody.content['application/json'].schema.properties.subject).toEqual({ type: 'string', minLength: 1, maxLength: 300, pattern: '^[^\\u0000\\uD800-\\uDFFF]*$' });
  });

  it('documents every route the public router serves, and nothing else', async () => {
    const { body } = await request(ctx.api.app).get('/api/v1/openapi.json');
    const served = ((v1Router(db(), new KeyAuthenticator(db()), new AuthFailures(20), (_req, _res, next) => next(), createApiState(db())) as unknown as { stack: Layer[] }).stack as Layer[])
      .filter((layer) => layer.route)
      .flatMap((layer) => Object.keys(layer.route!.methods).filter((m) => m !== '_all').map((m) => `${m} ${layer.route!.path.replace(/:(\w+)/g, '{$1}')}`))
      .sort();
    const documented = Object.entries(body.paths as Record<string, object>)
      .flatMap(([path, operations]) => Object.keys(operations).map((m) => `${m} ${path}`))
      .sort();
    expect(documented).toEqual(served);
  });

  it('the answer check refuses a body off its schema and an undocumented status', async () => {
    const tenant = await makeTenant();
    const ok = await as(ctx.api, tenant.token).get('/api/v1/lists');
    const record = (status: number, body: unknown) => ({ method: 'GET', path: '/api/v1/lists', status, contentType: 'application/json', body: JSON.stringify(body) });
    expect(answerProblems([record(200, ok.body)])).toEqual([]);
    expect(answerProblems([record(200, { ok: true, lists: [{ key: 'k', name: 'n', confirm: 'yes', subscribers: 1 }] })])[0]).toMatch(/confirm must be boolean/);
    expect(answerProblems([record(200, { ok: true })])[0]).toMatch(/must have required property 'lists'/);
    expect(answerProblems([record(418, { ok: false, error: 'x' })])[0]).toMatch(/status 418 is not documented/);
    expect(answerProblems([{ ...record(405, { ok: false, error: 'no' }), method: 'PUT' }])).toEqual([]);
    expect(answerProblems([{ ...record(200, { ok: true }), path: '/api/v1/nowhere' }])[0]).toMatch(/not a documented operation/);
  });
});

describe('GET /docs', () => {
  it('serves the page and its assets from the installed swagger-ui-dist, with a CSP that allows this origin only', async () => {
    const page = await request(ctx.api.app).get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/script-src 'self';/);
    const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(sources.length).toBeGreaterThan(2);
    for (const source of sources) {
      expect(source.startsWith('/')).toBe(true);
      expect((await request(ctx.api.app).get(source)).status).toBe(200);
    }
    expect((await request(ctx.api.app).get('/docs/assets/package.json')).status).toBe(404);
  });
});
