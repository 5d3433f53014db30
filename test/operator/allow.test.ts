import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { openApiDocument } from '../../apps/api/src/openapi/document';
import { adminOpenApiDocument } from '../../apps/api/src/openapi/admin-document';
import { adminRouter } from '../../apps/api/src/routes/admin';
import { db } from '../../apps/core/src/db';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { ADMIN_TOKEN, useApi } from '../helpers/api';
import { makeTenant } from '../helpers/factories';

/**
 * RFC 9110 15.5.6, held to the OpenAPI documents: on every documented path, each documented method is served (never
 * 405), and every other method answers 405 with `Allow` naming exactly the documented ones, plus HEAD wherever GET is
 * (Express answers HEAD with the GET route). And the admin document lists every route the admin routers serve.
 */
const ctx = useApi();

type Operations = Record<string, Record<string, unknown>>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const publicPaths = openApiDocument().paths as Operations;
const adminPaths = adminOpenApiDocument().paths as Operations;

/** What `Allow` must say for a path's documented methods. */
const allowOf = (documented: string[]) => {
  const methods = documented.map((m) => m.toUpperCase());
  if (methods.includes('GET')) methods.push('HEAD');
  return methods.sort();
};

const allowed = (res: request.Response) => String(res.headers.allow ?? '').split(', ').filter(Boolean).sort();

let token = '';
beforeAll(async () => {
  token = (await makeTenant({ prospects: true })).token;
});

function checksPaths(name: string, paths: Operations, base: string, credential: () => string, concrete: (path: string) => string) {
  describe(name, () => {
    it.each(Object.keys(paths))('%s: its methods are served, any other answers 405 naming them', async (documentedPath) => {
      const url = `${base}${concrete(documentedPath)}`;
      const documented = Object.keys(paths[documentedPath]!);
      const call = (method: (typeof METHODS)[number] | 'head') => {
        const req = request(ctx.api.app)[method](url).set('Authorization', `Bearer ${credential()}`);
        // a JSON body wherever one may go: the answer is a validation's or a lookup's, never the route's absence
        return method === 'post' || method === 'patch' || method === 'put' ? req.send({}) : req;
      };
      for (const method of documented) {
        const res = await call(method as (typeof METHODS)[number]);
        expect({ method, status: res.status }).not.toEqual({ method, status: 405 });
        // a 404 may say the row is not there, never that the route is not
        expect({ method, error: String(res.body?.error ?? '') }).not.toEqual({ method, error: expect.stringMatching(/^no route /) });
      }
      if (documented.includes('get')) expect((await call('head')).status).not.toBe(405);
      for (const method of METHODS.filter((m) => !documented.includes(m))) {
        const res = await call(method);
        expect({ method, status: res.status }).toEqual({ method, status: 405 });
        expect(res.body).toEqual({ ok: false, error: expect.any(String) });
        expect(allowed(res)).toEqual(allowOf(documented));
      }
    });
  });
}

// ids of rows that do not exist: nothing is changed, and no connection test reaches out to a server
checksPaths('the public API (/api/v1/openapi.json)', publicPaths, '/api/v1', () => token, (p) => p.replace('{id}', '00000000-0000-4000-8000-000000000000'));
checksPaths('the admin API (/admin/api/openapi.json)', adminPaths, '/admin/api', () => ADMIN_TOKEN, (p) => p.replace('{id}', '999999'));

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  slash: boolean;
  rawPath?: string;
}

/** `get /lists/{id}` for every route of a router, nested routers included (at their mount path). */
function served(stack: Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      const path = `${prefix}${layer.route.path}`.replace(/:(\w+)/g, '{$1}');
      return Object.keys(layer.route.methods).filter((m) => m !== '_all').map((m) => `${m} ${path}`);
    }
    return layer.handle.stack ? served(layer.handle.stack, layer.slash ? prefix : `${prefix}${layer.rawPath ?? ''}`) : [];
  });
}

describe('the admin API document', () => {
  const documented = Object.entries(adminPaths)
    .flatMap(([path, operations]) => Object.keys(operations).map((m) => `${m} ${path}`))
    .sort();

  it('lists every route the admin routers serve, and nothing they do not', () => {
    const router = adminRouter(db(), (_req, _res, next) => next(), deliveryRegistrations().kinds) as unknown as { stack: Layer[] };
    const routes = served(router.stack).sort();
    expect(routes.length).toBeGreaterThan(30);
    expect(documented).toEqual(routes);
  });

  it('has every admin call docs/api.md names', () => {
    const text = fs.readFileSync(path.join(__dirname, '../../docs/api.md'), 'utf8');
    // `POST /admin/api/lists`, and `GET`/`PATCH /admin/api/lists/:id` for two methods of one path
    const calls = [...text.matchAll(/`((?:(?:GET|POST|PUT|PATCH|DELETE)`\/`)*)(GET|POST|PUT|PATCH|DELETE) \/admin\/api(\/[^\s`?]*)/g)].flatMap((m) =>
      [...(m[1]!.match(/[A-Z]+/g) ?? []), m[2]!].map((method) => `${method.toLowerCase()} ${m[3]!.replace(/:(\w+)/g, '{$1}')}`),
    );
    expect(calls.length).toBeGreaterThan(20);
    expect(calls.filter((call) => !documented.includes(call))).toEqual([]);
  });

  it('is served at /admin/api/openapi.json behind the admin token', async () => {
    const res = await request(ctx.api.app).get('/admin/api/openapi.json').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(JSON.parse(JSON.stringify(adminOpenApiDocument())));
    expect(res.body.paths['/lists'].post.requestBody.content['application/json'].schema.required).toEqual(['account', 'name', 'confirm', 'mailbox']);
    expect((await request(ctx.api.app).get('/admin/api/openapi.json')).status).toBe(401);
    const ids = Object.values(adminPaths).flatMap((operations) => Object.values(operations).map((op) => (op as { operationId: string }).operationId));
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('paths outside the documents', () => {
  it.each([
    ['put', '/confirm/some-token', ['GET', 'HEAD', 'POST'], 'html'],
    ['delete', '/f/some-list-key', ['GET', 'HEAD', 'POST'], 'html'],
    ['put', '/u/some-token', ['GET', 'HEAD', 'POST'], 'html'],
    ['post', '/c/some-token', ['GET', 'HEAD'], 'html'],
    ['delete', '/o/some-token.gif', ['GET', 'HEAD'], 'html'],
    ['post', '/healthz', ['GET', 'HEAD'], 'json'],
    ['post', '/readyz', ['GET', 'HEAD'], 'json'],
    ['post', '/api/v1/openapi.json', ['GET', 'HEAD'], 'json'],
    ['delete', '/docs', ['GET', 'HEAD'], 'json'],
    ['post', '/docs/init.js', ['GET', 'HEAD'], 'json'],
    ['put', '/docs/assets/swagger-ui.css', ['GET', 'HEAD'], 'json'],
    ['post', '/metrics', ['GET', 'HEAD'], 'json'],
  ] as const)('%s %s answers 405 with Allow', async (method, url, allow, type) => {
    const res = await request(ctx.api.app)[method](url).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(405);
    expect(allowed(res)).toEqual([...allow]);
    expect(res.headers['content-type']).toMatch(type === 'html' ? /^text\/html/ : /^application\/json/);
  });

  it('asks for the admin token on /metrics before naming its methods', async () => {
    expect((await request(ctx.api.app).post('/metrics')).status).toBe(401);
  });

  it('an asset /docs does not serve is 404, not 405', async () => {
    expect((await request(ctx.api.app).get('/docs/assets/nothing.js')).status).toBe(404);
  });
});
