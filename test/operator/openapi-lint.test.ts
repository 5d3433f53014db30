import { Document, Spectral } from '@stoplight/spectral-core';
import * as Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import request from 'supertest';
import { useApi } from '../helpers/api';

/** Spectral's `spectral:oas` ruleset, run offline on the served document: no error. */
const ctx = useApi();

it('/api/v1/openapi.json has no error under spectral:oas', async () => {
  const doc = (await request(ctx.api.app).get('/api/v1/openapi.json')).body;
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']] } as never);
  const results = await spectral.run(new Document(JSON.stringify(doc, null, 2), Parsers.Json));
  const errors = results.filter((r) => r.severity === 0).map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
  expect(errors).toEqual([]);
});
