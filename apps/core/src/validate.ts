import Joi from 'joi';
import { BadRequest } from './errors';

const PREFERENCES: Joi.ValidationOptions = { abortEarly: true, errors: { wrap: { label: false } } };
/** Each schema with our preferences applied once: given per call, joi would merge them again on every validation. */
const prepared = new WeakMap<Joi.Schema, Joi.Schema>();

/** Validates and converts `value`, or throws BadRequest naming the first bad field (`to[3] must be a valid email`). */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  let ready = prepared.get(schema);
  if (!ready) prepared.set(schema, (ready = schema.prefs(PREFERENCES)));
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

export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

export { Joi };
