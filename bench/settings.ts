/** The bench's settings (its environment variables), ports, names and secrets, read once for every phase. */
import crypto from 'node:crypto';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
export const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
export const CONNECTIONS = 50;
/**
 * Emails sent through the same path before a delivery or broadcast measurement, on each side. 500 were not enough:
 * after them, the worker's CPU an email kept falling over the next 4,000 (1,000 at a time: 1.10, 0.80, 0.73, 0.63,
 * 0.60, 0.57 ms; the API's 0.48 to 0.21), its V8 threads still compiling, so a 5,000-send turn measured the JIT's
 * warm-up more than the service (bench/README.md, "How it measures").
 */
export const WARMUP_MESSAGES = 5000;
export const PG_SERVER = process.env.BENCH_DATABASE_SERVER ?? 'postgresql://postgres@127.0.0.1:5432';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const STAMP = Date.now().toString(36);
// NODE_ENV=production takes an admin token of at least 32 random characters
export const ADMIN_TOKEN = crypto.randomBytes(24).toString('hex');
export const SECRET_KEY = 'ab'.repeat(32);
/** the broadcast phase's list size; BENCH_ONLY=main (accept: its first phase alone; delivery: its second alone), broadcast, scheduler, memory, growth, scale, templates, batch, domains, smtp or mx runs that phase alone */
export const BROADCAST_SUBSCRIBERS = Number(process.env.BENCH_BROADCAST ?? 100_000);
export const ONLY = process.env.BENCH_ONLY ?? '';
/**
 * BENCH_PORT_BASE moves the nine loopback ports (two benches on one machine must not share a sink). The default lies
 * below Linux's ephemeral range (32768-60999): inside it, one of the bench's own thousands of connections can hold a
 * port when a server is about to bind it.
 */
const PORT_BASE = Number(process.env.BENCH_PORT_BASE ?? 29100);
export const PORTS = { api: PORT_BASE, baseline: PORT_BASE + 1, sinkSmtp: PORT_BASE + 2, sinkHttp: PORT_BASE + 3, slowSmtp: PORT_BASE + 4, slowHttp: PORT_BASE + 5, submission: PORT_BASE + 6, mx: PORT_BASE + 7, mxBaseline: PORT_BASE + 8 };
