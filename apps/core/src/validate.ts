import Joi from 'joi';
import { BadRequest } from './errors';

/** Validates and converts `value`, or throws BadRequest naming the first bad field (`to[3] must be a valid email`). */
export function validate<T>(schema: Joi.Schema<T>, value: unknown): T {
  const { error, value: converted } = schema.validate(value, {
    abortEarly: true,
    errors: { wrap: { label: false } },
  });
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
