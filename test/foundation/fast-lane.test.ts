import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { useApi } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';

/**
 * POST /api/v1/send and POST /api/v1/subscribers go around Express when they are plain (apps/api/src/lane.ts). The same
 * request through the lane and through Express (a query string sends it there) must answer alike: status, body,
 * headers, and what they write.
 */
const ctx = useApi();

interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  viaLane: boolean;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
/** Headers whose values differ between any two requests. */
const PER_REQUEST = new Set(['date', 'x-request-id', 'location', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after', 'content-length', 'connection', 'keep-alive']);

async function post(path: string, token: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const before = ctx.api.state.lane.answered;
  const res = await request(ctx.api.app)
    .post(path)
    .set({ Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...headers })
    .send(body);
  return { status: res.status, body: res.body, headers: res.headers as Record<string, string>, viaLane: ctx.api.state.lane.answered > before };
}

/** What must be the same either way: ids replaced, per-request header values left out (their names kept). */
function comparable(answer: Answer) {
  const headers = Object.fromEntries(Object.entries(answer.headers).map(([name, value]) => [name, PER_REQUEST.has(name) ? '*' : value]));
  return { status: answer.status, body: JSON.parse(JSON.stringify(answer.body).replace(UUID, 'ID')), headers };
}

/** The request once through the lane and once through Express, in that order; both answers. */
async function bothWays(path: string, token: string, body: string, headers: Record<string, string> = {}) {
  const lane = await post(path, token, body, headers);
  const express = await post(`${path}?via=express`, token, body, headers);
  expect(lane.viaLane).toBe(true);
  expect(express.viaLane).toBe(false);
  return { lane, express };
}

const plain = JSON.stringify({ to: 'reader@example.org', subject: 'Hi', text: 'Hello' });

describe('the fast lane: POST /api/v1/send', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await makeTenant();
  });

  it.each([
    ['accepted', plain],
    ['accepted, the body starting with a byte-order mark', `\uFEFF${plain}`],
    ['refused by validation', JSON.stringify({ to: 'not an address', subject: 'Hi', text: 'Hello' })],
    ['refused: not JSON', '{"to": "reader@example.org",'],
    ['refused: a NUL byte', JSON.stringify({ to: 'reader@example.org', subject: 'Hi\u0000', text: 'Hello' })],
    ['refused: nested too deep', JSON.stringify({ to: 'reader@example.org', subject: 'Hi', text: 'Hello', metadata: JSON.parse('{"a":'.repeat(40) + '1' + '}'.repeat(40)) })],
    ['refused: JSON that is not an object', '"hello"'],
  ])('answers alike through the lane and through Express: %s', async (_case, body) => {
    const { lane, express } = await bothWays('/api/v1/send', tenant.token, body);
    expect(comparable(lane)).toEqual(comparable(express));
    expect(lane.headers['x-request-id']).toMatch(UUID);
    // what the route answers carries the key's limit, refusals too; a body refused before the route does not, either way
    if (lane.status === 202 || lane.status === 422) expect(lane.headers['ratelimit-limit']).toBeDefined();
  });

  it('writes the same send either way', async () => {
    const { lane, express } = await bothWays('/api/v1/send', tenant.token, plain);
    const rows = await db().message.findMany({ where: { sendId: { in: [(lane.body as { id: string }).id, (express.body as { id: string }).id] } } });
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => [r.to, r.subject, r.kind, r.status])).toEqual([
      ['reader@example.org', 'Hi', 'transactional', 'queued'],
      ['reader@example.org', 'Hi', 'transactional', 'queued'],
    ]);
    expect(lane.headers.location).toBe(`/api/v1/send/${(lane.body as { id: string }).id}`);
  });

  it('replays an Idempotency-Key and honours Prefer: wait the same way', async () => {
    const key = `lane-${Date.now()}`;
    const first = await post('/api/v1/send', tenant.token, plain, { 'Idempotency-Key': key });
    const again = await post('/api/v1/send', tenant.token, plain, { 'Idempotency-Key': key });
    expect(again.viaLane).toBe(true);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    // nothing delivers in this test: the wait runs out and the send is still queued, said the same way by both
    const { lane, express } = await bothWays('/api/v1/send', tenant.token, plain, { Prefer: 'wait=1' });
    expect(comparable(lane)).toEqual(comparable(express));
    expect(lane.headers['preference-applied']).toBe('wait=1');
  });

  it('answers the daily limit alike, with its RateLimit headers', async () => {
    const limited = await makeTenant({ daily_limit: 1 });
    expect((await post('/api/v1/send', limited.token, plain)).status).toBe(202);
    const { lane, express } = await bothWays('/api/v1/send', limited.token, plain);
    expect(lane.status).toBe(429);
    expect(comparable(lane)).toEqual(comparable(express));
    expect(lane.headers['ratelimit-remaining']).toBe('0');
  });

  it('leaves to Express what it does not take, before reading the body: unknown keys, other body types, no declared length', async () => {
    const unknown = await post('/api/v1/send', `msk_${'Z'.repeat(32)}`, plain);
    expect(unknown).toMatchObject({ status: 401, viaLane: false, body: { ok: false, error: 'the API key is unknown or revoked' } });
    expect(unknown.headers['www-authenticate']).toBe('Bearer');
    const latin = await post('/api/v1/send', tenant.token, plain, { 'Content-Type': 'application/json; charset=latin1' });
    expect(latin).toMatchObject({ status: 415, viaLane: false, body: { ok: false, error: 'the body must be UTF-8 JSON' } });
    const text = await post('/api/v1/send', tenant.token, plain, { 'Content-Type': 'text/plain' });
    expect(text).toMatchObject({ status: 400, viaLane: false });
    const before = ctx.api.state.lane.answered;
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = request(ctx.api.app).post('/api/v1/send').set({ Authorization: `Bearer ${tenant.token}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      req.write(plain);
      req.end((err, res) => (err ? reject(err) : resolve(res.status)));
    });
    expect(chunked).toBe(202);
    expect(ctx.api.state.lane.answered).toBe(before);
  });
});

describe('the fast lane: POST /api/v1/subscribers', () => {
  let tenant: Tenant;
  let list: string;
  beforeAll(async () => {
    tenant = await makeTenant();
    list = (await makeList(tenant.account.id, tenant.mailbox.id, { confirm: false })).key;
  });

  it.each([
    ['added', (n: number) => ({ list: '$list', email: `lane${n}@example.org`, name: 'Ada' })],
    ['refused: no such list', (n: number) => ({ list: 'no-such-list', email: `lane${n}@example.org` })],
    ['refused by validation', () => ({ list: '$list', email: 'not an address' })],
  ])('answers alike through the lane and through Express: %s', async (_case, make) => {
    const body = (n: number) => JSON.stringify(make(n)).replace('$list', list);
    const lane = await post('/api/v1/subscribers', tenant.token, body(1));
    const express = await post('/api/v1/subscribers?via=express', tenant.token, body(2));
    expect([lane.viaLane, express.viaLane]).toEqual([true, false]);
    expect(comparable(lane)).toEqual(comparable({ ...express, body: JSON.parse(JSON.stringify(express.body).replace('lane2@', 'lane1@')) }));
  });

  it('leaves a request with an Idempotency-Key to Express, which stores and replays it', async () => {
    const body = JSON.stringify({ list, email: 'kept@example.org' });
    const first = await post('/api/v1/subscribers', tenant.token, body, { 'Idempotency-Key': 'lane-subscriber-1' });
    const again = await post('/api/v1/subscribers', tenant.token, body, { 'Idempotency-Key': 'lane-subscriber-1' });
    expect([first.viaLane, again.viaLane]).toEqual([false, false]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });
});
