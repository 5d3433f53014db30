import fc from 'fast-check';

type Schema = Record<string, unknown>;

/**
 * Values generated from a JSON Schema, as a tool that reads the OpenAPI document would make them (Schemathesis's
 * positive phase, a client generator's examples): the subset of JSON Schema the document uses. `format: email` comes
 * from fast-check's addresses, `date-time` from its dates; a pattern next to a format filters what the format gave
 * (as hypothesis-jsonschema does); `allOf` filters what the rest of the schema gave through `valid`.
 */
export function arbitraryOf(schema: Schema, root: Schema, valid: (schema: Schema, value: unknown) => boolean): fc.Arbitrary<unknown> {
  const of = (s: Schema): fc.Arbitrary<unknown> => arbitraryOf(s, root, valid);
  if (typeof schema.$ref === 'string') {
    const target = schema.$ref.replace(/^#\//, '').split('/').reduce<unknown>((node, key) => (node as Schema)[key], root);
    return of(target as Schema);
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf: _all, ...rest } = schema;
    return of(rest).filter((value) => valid(schema, value));
  }
  if (Array.isArray(schema.anyOf)) {
    const { anyOf, ...rest } = schema;
    return fc.oneof(...(anyOf as Schema[]).map((branch) => of({ ...rest, ...branch })));
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'string':
      return stringOf(schema);
    case 'integer':
      return fc.integer({ min: Math.max(Number(schema.minimum ?? -(2 ** 31)), -(2 ** 31)), max: Math.min(Number(schema.maximum ?? 2 ** 31 - 1), 2 ** 31 - 1) });
    case 'number':
      return fc.double({ min: Number(schema.minimum ?? -1e300), max: Number(schema.maximum ?? 1e300), noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(of((schema.items ?? {}) as Schema), { minLength: Number(schema.minItems ?? 0), maxLength: Math.min(Number(schema.maxItems ?? 5), 10) });
    case 'object':
      return objectOf(schema, of);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function stringOf(schema: Schema): fc.Arbitrary<string> {
  const min = Number(schema.minLength ?? 0);
  const max = Number(schema.maxLength ?? 40);
  const fits = (s: string) => s.length >= min && s.length <= max;
  const pattern = typeof schema.pattern === 'string' ? new RegExp(schema.pattern, 'u') : null;
  let base: fc.Arbitrary<string>;
  if (schema.format === 'email') base = fc.emailAddress();
  else if (schema.format === 'date-time') base = fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01') }).map((d) => d.toISOString());
  // a pattern's repeats are short at fast-check's default size: a minLength (an Idempotency-Key's 16) wants longer ones
  else if (pattern) return fc.stringMatching(pattern, min > 0 ? { size: 'medium' } : {}).filter(fits);
  else base = fc.string({ minLength: min, maxLength: Math.min(max, min + 40), unit: 'grapheme' });
  return base.filter((s) => fits(s) && (!pattern || pattern.test(s)));
}

function objectOf(schema: Schema, of: (s: Schema) => fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required ?? []) as string[]);
  const known = Object.keys(properties);
  if (known.length) {
    const record = fc.record(Object.fromEntries(known.map((k) => [k, of(properties[k]!)])), { requiredKeys: known.filter((k) => required.has(k)) });
    return record;
  }
  const additional = schema.additionalProperties;
  if (additional === false) return fc.constant({});
  const names = schema.propertyNames ? (of({ type: 'string', ...(schema.propertyNames as Schema) }) as fc.Arbitrary<string>) : fc.string({ minLength: 1, maxLength: 20 });
  const values = additional && additional !== true ? of(additional as Schema) : fc.jsonValue({ maxDepth: 2 });
  return fc.dictionary(names, values, { maxKeys: Math.min(Number(schema.maxProperties ?? 5), 5) });
}
