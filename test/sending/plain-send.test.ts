import fc from 'fast-check';
import { Joi, email, validate } from '../../apps/core/src/validate';
import { parseSendRequest, plainAddress, plainSend, sendSchema } from '../../apps/core/src/sending/schema';

/**
 * The plain send is read without joi (schema.ts plainSend): whatever it accepts, it must answer exactly as joi does,
 * and it must take the bodies most clients send. joi's own conversion of an address field is spelled out here
 * (`joiAddress`), as namedAddress did it before the plain reading existed, so the comparison does not go through
 * plainAddress itself.
 */
const joiAddress = (raw: unknown): { name: string; address: string } | undefined => {
  if (Joi.string().max(400).validate(raw).error) return undefined;
  const match = /^\s*(?:"?([^"<>]*?)"?\s*)?<([^<>]+)>\s*$/.exec(raw as string);
  const { name, bare } = match ? { name: (match[1] ?? '').trim(), bare: match[2]!.trim() } : { name: '', bare: (raw as string).trim() };
  const { error, value } = email().validate(bare);
  return error ? undefined : { name, address: value as string };
};

const RUNS = 3000;

/** Mixed case, the way people type addresses */
const cased = (text: string) => fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((up) => [...text].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''));
const space = fc.constantFrom('', ' ', '  ', '\t', '\n', '\u00a0');
const bare = fc.oneof(
  fc.emailAddress().chain(cased),
  fc.tuple(fc.stringMatching(/^[a-zA-Z0-9._%+'-]{1,70}$/), fc.domain()).map(([local, domain]) => `${local}@${domain}`).chain(cased),
  fc.tuple(fc.fullUnicodeString({ minLength: 1, maxLength: 12 }), fc.constantFrom('example.com', 'bücher.de', 'x.y', 'a.b.c1', 'local')).map(([local, domain]) => `${local}@${domain}`),
  fc.constantFrom('İnfo@example.com', 'user@[127.0.0.1]', '"quoted"@example.com', 'a..b@example.com', 'a@b', `${'a'.repeat(250)}@example.com`, 'reader@example.com.', '@example.com'),
  fc.fullUnicodeString({ maxLength: 30 }),
);
const field = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(space, bare, space).map((parts) => parts.join('')) },
  { weight: 3, arbitrary: fc.tuple(fc.fullUnicodeString({ maxLength: 20 }), space, bare, space).map(([name, s, address, t]) => `${name}${s}<${address}>${t}`) },
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 20 }), bare).map(([name, address]) => `"${name}" <${address}>`) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(''), fc.constant('x'.repeat(401)), fc.integer(), fc.constant(null), fc.object()) },
);

test('plainAddress answers what joi converts an address field to, or leaves the field to joi', () => {
  let taken = 0;
  fc.assert(
    fc.property(field, (raw) => {
      const plain = plainAddress(raw);
      if (plain === undefined) return;
      taken++;
      expect(plain).toEqual(joiAddress(raw));
    }),
    { numRuns: RUNS },
  );
  // the reading is not idle: most addresses people write take it
  expect(taken).toBeGreaterThan(RUNS / 4);
});

const text = fc.oneof(
  { weight: 6, arbitrary: fc.fullUnicodeString({ minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(''), fc.constant('s'.repeat(300)), fc.constant('s'.repeat(301)), fc.integer(), fc.constant(null), fc.boolean()) },
);
const plainFields = fc.record(
  {
    to: fc.oneof(field, fc.array(field, { maxLength: 4 }), fc.array(fc.constant('reader@example.com'), { minLength: 49, maxLength: 52 })),
    subject: text,
    text,
    html: text,
  },
  { requiredKeys: [] },
);
/** now and then a field beyond the plain ones */
const body = fc.tuple(plainFields, fc.option(fc.record({ from: field, metadata: fc.object() }, { requiredKeys: [] }), { freq: 5 })).map(([plain, more]) => ({ ...plain, ...more }));

test('plainSend answers what joi answers for the plain send, and leaves every other body to joi', () => {
  let taken = 0;
  fc.assert(
    fc.property(body, (value) => {
      const plain = plainSend(value);
      if (plain === undefined) return;
      taken++;
      expect(plain).toEqual(validate(sendSchema, value));
    }),
    { numRuns: RUNS },
  );
  expect(taken).toBeGreaterThan(RUNS / 50);
});

test('plainSend takes the usual bodies, named recipients and lists among them, as joi converts them', () => {
  const bodies = [
    { to: 'Reader@Example.COM', subject: 'Hello', text: 'Hi' },
    { to: ' Ann Reader <ann@example.com> ', subject: 'Hello', html: '<p>Hi</p>' },
    { to: ['a@example.com', '"B" <B@Example.org>'], subject: 'Hello', text: 'Hi', html: '<p>Hi</p>' },
    { to: 'reader@bücher.de', subject: 'S'.repeat(300), text: '' },
  ];
  for (const b of bodies) {
    expect(plainSend(b)).toBeDefined();
    expect(plainSend(b)).toEqual(validate(sendSchema, b));
  }
  expect(parseSendRequest(bodies[2], 'sender@example.com')).toMatchObject({ to: ['a@example.com', 'b@example.org'], text: 'Hi', html: '<p>Hi</p>', fromName: null });
});

test('a body with any other field, or a value joi refuses, goes to joi, which words the refusal', () => {
  for (const b of [
    { to: 'reader@example.com', subject: 'Hello', text: 'Hi', from: 'sender@example.com' },
    { to: 'reader@example.com', subject: '', text: 'Hi' },
    { to: 'not an address', subject: 'Hello', text: 'Hi' },
    { to: [], subject: 'Hello', text: 'Hi' },
    { to: Array(51).fill('reader@example.com'), subject: 'Hello', text: 'Hi' },
    { to: 'reader@example.com', subject: 'Hello', text: 7 },
    JSON.parse('{"to":"reader@example.com","subject":"Hello","text":"Hi","__proto__":{}}'),
    Object.assign(Object.create({ inherited: 1 }), { to: 'reader@example.com', subject: 'Hello', text: 'Hi' }),
    ['reader@example.com'],
    null,
  ]) {
    expect(plainSend(b)).toBeUndefined();
  }
  expect(() => parseSendRequest({ to: 'not an address', subject: 'Hello', text: 'Hi' }, 'sender@example.com')).toThrow('to must be a valid email');
});
