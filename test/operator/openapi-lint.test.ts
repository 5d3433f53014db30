import { Document, Spectral } from '@stoplight/spectral-core';
import * as Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import request from 'supertest';
import { ADMIN_TOKEN, useApi } from '../helpers/api';

/** Spectral's `spectral:oas` ruleset, run offline on the served document: no error. */
const ctx = useApi();

it.each([
  ['/api/v1/openapi.json', ''],
  ['/admin/api/openapi.json', ADMIN_TOKEN],
])('%s has no error under spectral:oas', async (path, token) => {
  const doc = (await request(ctx.api.app).get(path).set(token ? { Authorization: `Bearer ${token}` } : {})).body;
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] } as never);
  const results = await spectral.run(new Document(JSON.stringify(doc, null, 2), Parsers.Json));
  const errors = results.filter((r) => r.severity === 0).map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
  expect(errors).toEqual([]);
});
