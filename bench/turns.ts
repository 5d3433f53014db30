/** Loads with autocannon, and the same-run comparison's turns: how many, in which order, and how they combine. */
import autocannon from 'autocannon';
import { CONNECTIONS, SECONDS } from './settings';

export interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total2xx: number;
}

export async function load(options: autocannon.Options): Promise<Load> {
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total2xx: result['2xx'],
  };
}

/**
 * How many turns each side of a same-run comparison gets. The host's speed drifts within minutes (bare Express did
 * 2,670 and then 4,795 req/s 15 minutes apart on 23 Nov), so a baseline measured once, before or after our side, puts
 * that drift into the ratio. In turns (A B, B A, A B...), both sides see the same stretch of the host.
 */
export const TURNS = 3;
/** The delivery phase's turns: each is MESSAGES emails a side. */
export const DELIVERY_TURNS = 2;

/** Runs `a` and `b` `turns` times each, alternating which goes first, so a steady drift weighs on both alike. */
export async function inTurns(turns: number, a: () => Promise<void>, b: () => Promise<void>): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (i % 2 === 0) {
      await a();
      await b();
    } else {
      await b();
      await a();
    }
  }
}

/** Equal windows of one load as one: the mean rate, the counts added up, the median p50 and the worst p99. */
export function combined(windows: Load[]): Load {
  const sum = (pick: (w: Load) => number) => windows.reduce((total, w) => total + pick(w), 0);
  const p50s = windows.map((w) => w.p50).sort((x, y) => x - y);
  return {
    rps: Math.round(sum((w) => w.rps) / windows.length),
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...windows.map((w) => w.p99)),
    errors: sum((w) => w.errors),
    non2xx: sum((w) => w.non2xx),
    total2xx: sum((w) => w.total2xx),
  };
}

/**
 * The whole pipeline's CPU an email (API + worker + Postgres + Redis; the sink left out, as on nodemailer's side) over
 * nodemailer's own CPU an email sending the same emails to the same sink (the target: at most 1.5, bench/README.md).
 */
export function pipelineCpuRatio(perEmail: Record<string, number>, nodemailer: number): number {
  const pipeline = Object.entries(perEmail).filter(([k]) => k !== 'sink').reduce((total, [, v]) => total + v, 0);
  return +(pipeline / nodemailer).toFixed(2);
}

/** The mean of each key over several per-request figures. */
export function meanOf(figures: Record<string, number>[]): Record<string, number> {
  return Object.fromEntries(Object.keys(figures[0]!).map((k) => [k, +(figures.reduce((total, f) => total + f[k]!, 0) / figures.length).toFixed(3)]));
}

