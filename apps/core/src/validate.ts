import Joi from 'joi';
import { BadRequest } from './errors';

const PREFERENCES: Joi.ValidationOptions = { abortEarly: true, errors: { wrap: { label: false } } };
/** Each schema with our preferences applied once: given per call, joi would merge them again on every validation. */
const prepared = new WeakMap<Joi.Schema, Joi.Schema>();

/** Validates and converts `value`, or throws BadRequest naming the first bad field (`to[3] must be a valid email`). */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  let ready = prepared.get(schema);
  if (!ready) prepared.set(schema, (ready = schema.prefs(PREFERENCES)));
  // an absent body is not an empty object: joi would accept `undefined` for an optional object and hand it back
  if (value === undefined && schema.type === 'object') throw new BadRequest('send a JSON object as the body');
  const { error, value: converted } = ready.validate(value);
  if (error) {
    const detail = error.details[0];
    const where = detail?.path.length ? detail.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : (i ? '.' : '') + p)).join('') : '';
    const message = detail?.message ?? error.message;
    throw new BadRequest(where && !message.startsWith(where) ? `${where}: ${message}` : message);
  }
  return converted as T;
}

/**
 * JSON Schema that the OpenAPI document (apps/api/src/openapi/document.ts) merges into what joi-to-json writes for
 * `schema`: a rule that joi checks in code (a custom rule, a check joi-to-json cannot translate) is stated here, beside
 * the rule, so the document and the validation come from one place. A key given as null drops what joi-to-json wrote
 * there (when the documented schema says it another way).
 */
export const documented = <T extends Joi.Schema>(schema: T, jsonSchema: Record<string, unknown>): T => schema.meta({ [DOCUMENTED]: jsonSchema }) as T;
/** The meta key `documented` writes (joi-to-json copies `x-` keys into its output, where the document merges them). */
export const DOCUMENTED = 'x-documented';

/**
 * No text may hold a NUL byte or a lone UTF-16 surrogate (Postgres cannot store them: the API refuses any body holding
 * one, apps/api/src/middleware/text.ts). JSON Schema patterns are read as Unicode (ajv's `u` flag), so a pair is one
 * character outside the surrogate range.
 */
export const NO_NUL = '^[^\\u0000\\uD800-\\uDFFF]*$';

/** JSON that nests up to `depth` levels below this one, its text without NUL. */
function jsonValue(depth: number): Record<string, unknown> {
  const scalars = [{ type: 'string', pattern: NO_NUL }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }];
  if (!depth) return { anyOf: scalars };
  const inner = jsonValue(depth - 1);
  return { anyOf: [...scalars, { type: 'array', items: inner }, { type: 'object', propertyNames: { pattern: NO_NUL }, additionalProperties: inner }] };
}

/**
 * A JSON value the API can store (`#/components/schemas/JsonValue` of the document): text without NUL. Spelled out to
 * two levels, as JSON Schema tools generate requests from a schema that does not refer to itself; the API takes
 * deeper values too (up to 32 levels).
 */
export const JSON_VALUE = {
  description: 'any JSON value; no text (string or key) may hold a NUL byte; spelled out to two levels here, deeper ones (up to 32) are taken too',
  ...jsonValue(1),
};

/** A TLD as joi's email rule takes it: a letter first. */
const TLD = '[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/**
 * An address as accepted everywhere: trimmed, lower-cased, syntactically valid, any TLD. The document says
 * `format: email` and what that format does not: a domain of two labels or more, a TLD that starts with a letter.
 */
export const email = () =>
  documented(Joi.string().trim().lowercase().max(254).email({ tlds: false, allowUnicode: true }), { pattern: `^[^@]+@(?:[^@.]+\\.)+${TLD}$` });

/** The largest id a Postgres `integer` column holds: a larger one is a 400, never a query that fails. */
export const MAX_ID = 2_147_483_647;
/** A row id in a path, body or query. */
export const dbId = () => Joi.number().integer().positive().max(MAX_ID);

/** A row's name as people give it (an account's, a key's, a list's, a campaign's). */
export const displayName = () => Joi.string().trim().min(1).max(200);

/** The id in an admin path (`/.../:id`). */
export const idParam = dbId().required().label('id');

/** The reads of one account's rows: `?account=<id>`. */
export const accountQuery = Joi.object({ account: dbId().required() });

/** A listing's `?account=`: without it, every account the caller may read (docs/teams.md). */
export const listingQuery = Joi.object({ account: dbId() });

export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

export { Joi };
