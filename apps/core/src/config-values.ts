/**
 * Reading one environment variable into a checked value (config.ts reads the whole configuration with these): a
 * whole number in a range, a positive number, one of some words, a flag, a URL, a host name, a host list, TRUST_PROXY.
 * A value out of its rule throws a ConfigError that names the variable, so the process stops with one clear line.
 */
import net from 'node:net';
import { firstHostUrl } from './failover/hosts';

export class ConfigError extends Error {}

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port,host:port` (an IPv6 address in brackets: `[::1]:26379`); empty means not set. */
export function parseHostList(name: string, raw: string | undefined, defaultPort: number): HostPort[] | null {
  const text = (raw ?? '').trim();
  if (text === '') return null;
  return text.split(',').map((entry) => {
    const item = entry.trim();
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]]+))(?::(\d+))?$/.exec(item);
    const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
    if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new ConfigError(`${name} must be a comma-separated list of host:port, got "${item}"`);
    }
    return { host: match[1] ?? match[2]!, port };
  });
}

/** Names Express's `trust proxy` understands besides addresses and ranges. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: empty or `false` trusts no proxy (the connection's address is the client's); a whole number trusts that
 * many hops in front of the API; otherwise a comma-separated list of addresses, CIDR ranges or the names loopback,
 * linklocal, uniquelocal.
 */
export function parseTrustProxy(raw: string | undefined): false | number | string[] {
  const text = (raw ?? '').trim();
  if (text === '' || /^(false|no|off|none)$/i.test(text)) return false;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 10) throw new ConfigError(`TRUST_PROXY hop count must be at most 10, got "${raw}"`);
    return hops === 0 ? false : hops;
  }
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = net.isIP(address ?? '');
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (PROXY_NAMES.includes(entry)) continue;
    if (!family || !validBits || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY must be false, a hop count, or addresses, CIDR ranges and ${PROXY_NAMES.join('/')} separated by commas; "${entry}" is none of these`);
    }
  }
  return entries;
}

export function integer(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

export function positiveNumber(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || value > max) throw new ConfigError(`${name} must be a number above 0 and at most ${max}, got "${raw}"`);
  return value;
}

export function oneOf<T extends string>(name: string, fallback: T, values: readonly T[]): T {
  const raw = (process.env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${process.env[name]}"`);
  return raw as T;
}

export function flag(name: string, fallback: boolean): boolean {
  const raw = (process.env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${process.env[name]}"`);
}

export function url(name: string, fallback: string, protocols: string[]): string {
  const raw = process.env[name] || fallback;
  let parsed: URL;
  try {
    // a Postgres URL may list several hosts (failover/): each is checked as the first one is
    parsed = new URL(protocols.includes('postgresql:') ? firstHostUrl(raw) : raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => p + '//').join(' or ')}`);
  }
  return raw;
}

/** A DNS host name setting (SPF_INCLUDE, RETURN_PATH_HOST), lower case; empty when unset. */
export function hostName(name: string): string {
  const raw = (process.env[name] ?? '').trim().toLowerCase().replace(/\.$/, '');
  if (raw !== '' && !/^(?=.{1,253}$)([a-z0-9_]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/.test(raw)) throw new ConfigError(`${name} must be a host name, got "${raw}"`);
  return raw;
}
