import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import type { Readable } from 'node:stream';
import { logger } from '../logger';
import { guardedLookup, refuseLiteralAddress, RefusedAddress, type OutboundPolicy } from '../outbound/guard';

/** At most 5 redirects, 10 s for the whole fetch, 2 MB of page (docs/links.md); the outbound guard's policy. */
export interface FetchLimits extends OutboundPolicy {
  maxRedirects: number;
  timeoutMs: number;
  maxBytes: number;
}

export const FETCH_LIMITS = { maxRedirects: 5, timeoutMs: 10_000, maxBytes: 2 * 1024 * 1024 } as const;

export interface FetchedPage {
  /** where the last redirect led: relative links on the page resolve against it */
  url: string;
  html: string;
}

/** A fetch that did not give a page; the message is kept as the check's error. */
export class FetchFailed extends Error {}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function parseUrl(raw: string, base?: string): URL {
  let url: URL;
  try {
    url = new URL(raw, base);
  } catch {
    throw new FetchFailed(`not a valid URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchFailed(`only http and https pages are fetched, not ${url.protocol}`);
  return url;
}

interface Hop {
  status: number;
  location: string | undefined;
  body: Readable;
  encoding: string;
  length: number | null;
}

function request(url: URL, limits: FetchLimits, signal: AbortSignal): Promise<Hop> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: 'GET',
        signal,
        lookup: guardedLookup(limits) as unknown as typeof import('node:dns').lookup,
        headers: { 'user-agent': 'mailservice-link-check/1', accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.5', 'accept-encoding': 'gzip, deflate, br' },
      },
      (res) =>
        resolve({
          status: res.statusCode ?? 0,
          location: res.headers.location,
          body: res,
          encoding: String(res.headers['content-encoding'] ?? '').toLowerCase(),
          length: res.headers['content-length'] ? Number(res.headers['content-length']) : null,
        }),
    );
    req.on('error', reject);
    req.end();
  });
}

function decoded(hop: Hop): Readable {
  if (hop.encoding === 'gzip' || hop.encoding === 'x-gzip') return hop.body.pipe(zlib.createGunzip());
  if (hop.encoding === 'deflate') return hop.body.pipe(zlib.createInflate());
  if (hop.encoding === 'br') return hop.body.pipe(zlib.createBrotliDecompress());
  return hop.body;
}

/** Reads the page up to the cap (counted after decompression, so a small gzip bomb is caught too). */
async function readCapped(hop: Hop, maxBytes: number): Promise<string> {
  if (hop.length !== null && hop.length > maxBytes) throw new FetchFailed(`the page is over ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of decoded(hop)) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      hop.body.destroy();
      throw new FetchFailed(`the page is over ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * What the customer is told of a fetch that gave no page. Every way of not reaching it (a refused address, no such
 * host, a refused or reset connection, a timeout, a TLS failure) reads the same, so the checker cannot be used to map
 * networks or scan ports; the cause goes to the worker's log. What a reached server said (its HTTP status, a page too
 * big, too many redirects) is told as it is.
 */
export const NOT_REACHABLE = 'the page is not reachable';

function describe(err: unknown, url: URL): string {
  if (err instanceof FetchFailed) return err.message;
  const e = err as NodeJS.ErrnoException;
  const cause = err instanceof RefusedAddress ? err.message : e.name === 'AbortError' || e.name === 'TimeoutError' ? 'timeout' : (e.code ?? e.message);
  logger.info({ host: url.hostname, cause }, 'link check: page not reachable');
  return NOT_REACHABLE;
}

/**
 * Fetches an http(s) page as the link check needs it: redirects followed by hand (each hop's scheme and address checked
 * again; a relative Location resolves against the hop), one deadline for the whole fetch, the size capped. Refusals and
 * failures throw FetchFailed with the reason in plain words.
 */
export async function fetchPage(raw: string, limits: FetchLimits): Promise<FetchedPage> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let url = parseUrl(raw);
  try {
    for (let redirects = 0; ; redirects++) {
      refuseLiteralAddress(url.hostname, limits);
      const hop = await request(url, limits, signal);
      if (REDIRECTS.has(hop.status) && hop.location) {
        hop.body.resume();
        if (redirects >= limits.maxRedirects) throw new FetchFailed(`more than ${limits.maxRedirects} redirects`);
        url = parseUrl(hop.location, url.href);
        continue;
      }
      if (hop.status < 200 || hop.status >= 300) {
        hop.body.resume();
        throw new FetchFailed(`the page answered HTTP ${hop.status}`);
      }
      return { url: url.href, html: await readCapped(hop, limits.maxBytes) };
    }
  } catch (err) {
    throw new FetchFailed(describe(err, url));
  }
}
