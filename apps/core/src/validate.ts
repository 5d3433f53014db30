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

/** An address as accepted everywhere: trimmed, lower-cased, syntactically valid, any TLD. */
export const email = () => Joi.string().trim().lowercase().max(254).email({ tlds: false, allowUnicode: true });

/** The largest id a Postgres `integer` column holds: a larger one is a 400, never a query that fails. */
export const MAX_ID = 2_147_483_647;
/** A row id in a path, body or query. */
export const dbId = () => Joi.number().integer().positive().max(MAX_ID);

export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

export { Joi };
