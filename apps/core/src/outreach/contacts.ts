import { Joi } from '../validate';

/** How prospects are matched: normalised addresses and site hosts (who may never be written to: stop-list/repository.ts). */

const emailSchema = Joi.string().trim().lowercase().max(254).email({ tlds: false, allowUnicode: true });

/** A lower-cased valid address, or null. */
export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string' || !raw.trim()) return null;
  const { error, value } = emailSchema.validate(raw);
  return error ? null : (value as string);
}

/** `https://www.Example.com/path` -> `example.com`: no scheme, no `www.`, no port or path, lower-case; null when not a host name. */
export function normaliseSite(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  let rest = raw.trim().toLowerCase();
  if (!rest || rest.length > 2000) return null;
  rest = rest.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/^\/\//, '');
  let host: string;
  try {
    host = new URL(`http://${rest}`).hostname;
  } catch {
    return null;
  }
  host = host.replace(/\.$/, '').replace(/^www\./, '');
  if (host.length > 253 || !/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(host)) return null;
  return host;
}
