import { useApi } from '../helpers/api';
import { address, listFixture } from './support';

const ctx = useApi();

type Fixture = Awaited<ReturnType<typeof listFixture>>;
let f: Fixture;
beforeAll(async () => {
  f = await listFixture(ctx.api, { confirm: false });
});

const add = (body: Record<string, unknown>) => f.subscribe({ email: address(), ...body });
const refused = async (body: Record<string, unknown>, field: RegExp) => {
  const res = await add(body);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({ ok: false, error: expect.stringMatching(field) });
};

const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag${i}`);
const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`field${i}`, i]));

describe('POST /api/v1/subscribers: field rules (docs/api.md)', () => {
  it('requires list and email, naming the missing field', async () => {
    const noList = await f.client.post('/api/v1/subscribers').send({ email: address() });
    expect(noList.status).toBe(400);
    expect(noList.body.error).toMatch(/^list/);
    await refused({ email: undefined }, /^email/);
    const empty = await f.client.post('/api/v1/subscribers').send({});
    expect(empty.status).toBe(400);
  });

  it.each(['not-an-address', 'a@', '@example.org', 'two words@example.org', '', 42])('refuses the email %p', async (email) => {
    await refused({ email }, /^email/);
  });

  it('accepts a name of 200 characters and refuses 201', async () => {
    expect((await add({ name: 'n'.repeat(200) })).body.status).toBe('active');
    await refused({ name: 'n'.repeat(201) }, /^name.*200/);
  });

  it('counts name characters, not UTF-16 units: 200 emoji are fine', async () => {
    expect((await add({ name: '😀'.repeat(200) })).body.status).toBe('active');
    await refused({ name: '😀'.repeat(201) }, /^name/);
  });

  it('refuses a name that is not a string', async () => {
    await refused({ name: 12 }, /^name/);
  });

  it('accepts 20 tags as an array and refuses 21', async () => {
    const email = address();
    expect((await f.subscribe({ email, tags: tags(20) })).body.status).toBe('active');
    expect((await f.subscriber(email))?.tags).toEqual(tags(20));
    await refused({ tags: tags(21) }, /^tags.*20/);
  });

  it('accepts 20 tags as a space-separated string and refuses 21', async () => {
    const email = address();
    expect((await f.subscribe({ email, tags: ` ${tags(20).join('  ')}\t` })).body.status).toBe('active');
    expect((await f.subscriber(email))?.tags).toEqual(tags(20));
    await refused({ tags: tags(21).join(' ') }, /^tags.*20/);
  });

  it('splits a tag string on any whitespace and treats an empty string as no tags', async () => {
    const email = address();
    await f.subscribe({ email, tags: 'news\nweekly\tvip' });
    expect((await f.subscriber(email))?.tags).toEqual(['news', 'weekly', 'vip']);
    const none = address();
    expect((await f.subscribe({ email: none, tags: '' })).body.status).toBe('active');
    expect((await f.subscriber(none))?.tags).toEqual([]);
  });

  it('refuses tags that are not strings, naming the tag', async () => {
    await refused({ tags: ['ok', 5] }, /^tags\[1\]/);
    await refused({ tags: { a: 1 } }, /^tags/);
    await refused({ tags: ['ok', ''] }, /^tags\[1\]/);
  });

  it('accepts 30 custom fields and refuses 31', async () => {
    const email = address();
    expect((await f.subscribe({ email, fields: fields(30) })).body.status).toBe('active');
    expect((await f.subscriber(email))?.fields).toEqual(fields(30));
    await refused({ fields: fields(31) }, /^fields.*30/);
  });

  it('accepts string, number and boolean field values and refuses others, naming the field', async () => {
    const email = address();
    const good = { company: 'Acme', seats: 12.5, trial: false };
    expect((await f.subscribe({ email, fields: good })).body.status).toBe('active');
    expect((await f.subscriber(email))?.fields).toEqual(good);
    await refused({ fields: { company: null } }, /^fields\.company.*string, a number or a boolean/);
    await refused({ fields: { nested: { a: 1 } } }, /^fields\.nested/);
    await refused({ fields: { list: [1, 2] } }, /^fields\.list/);
    await refused({ fields: 'plan=pro' }, /^fields/);
  });

  it('refuses a confirmed that is not a boolean', async () => {
    await refused({ confirmed: 'maybe' }, /^confirmed/);
  });

  it('refuses unknown fields, naming them', async () => {
    await refused({ colour: 'blue' }, /colour/);
  });

  it('refuses a body that is not an object', async () => {
    const res = await f.client.post('/api/v1/subscribers').send([{ list: f.list.key, email: address() }]);
    expect(res.status).toBe(400);
    expect(res.body.ok).toBe(false);
  });

  it('refuses a form-encoded body: the API speaks JSON', async () => {
    const res = await f.client.post('/api/v1/subscribers').type('form').send({ list: f.list.key, email: address() });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/JSON/);
  });

  it('keeps at most 20 tags and 30 fields when a repeated add merges in more, the newest first', async () => {
    const email = address();
    await f.subscribe({ email, tags: tags(20), fields: fields(30) });
    const newTags = ['fresh1', 'fresh2'];
    expect((await f.subscribe({ email, tags: newTags, fields: { extra: 'yes' } })).body.status).toBe('exists');
    const row = await f.subscriber(email);
    expect(row?.tags).toHaveLength(20);
    expect(row?.tags).toEqual(expect.arrayContaining(newTags));
    expect(Object.keys(row!.fields as object)).toHaveLength(30);
    expect(row?.fields).toMatchObject({ extra: 'yes' });
  });
});
