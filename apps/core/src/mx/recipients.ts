import type { Db } from '../db';
import { messageOfVerp } from '../delivery/verp';
import { KeptAnswers } from '../kept';
import { inboundDomainRoutes, type RouteRow } from './repository';
import { matchRoute } from './routes';
import type { Target } from './store';

/** A recipient the MX refuses during the session (never a bounce afterwards: no backscatter). */
export class Refusal extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
    /** its label in mailservice_mx_refusals_total */
    readonly reason: string,
  ) {
    super(message);
  }
}

/** An inbound domain's account and routes by name (null: not inbound here). */
export type DomainRoutes = (name: string) => Promise<{ id: number; accountId: number; name: string; routes: RouteRow[] } | null>;

/** `requireMxRecord` (MX_REQUIRE_MX_RECORD): a domain is inbound here only once a check found its MX record. */
const uncached = (db: Db, requireMxRecord: boolean): DomainRoutes => (name) => inboundDomainRoutes(db, name, requireMxRecord);

/**
 * How long the MX keeps a domain's routes: a route added, changed or removed, or a domain's MX record found, takes
 * effect within this.
 */
export const ROUTES_CACHE_MS = 5_000;

/** The domains' routes kept ROUTES_CACHE_MS (answers only: a failed lookup is asked again), made once per MX. */
export function cachedDomainRoutes(db: Db, requireMxRecord: boolean): DomainRoutes {
  const lookup = uncached(db, requireMxRecord);
  const kept = new KeptAnswers<Awaited<ReturnType<DomainRoutes>>>({ ms: ROUTES_CACHE_MS });
  return (name) => kept.get(name, () => lookup(name));
}

const VERP_LOCAL = /^b-[a-z2-7]{34}$/i;
const LOOKS_VERP = /\+b-[a-z2-7]{34}$/i;

/**
 * What the MX does with a RCPT TO (docs/mx.md): a VERP return path of ours (`local+b-<token>@domain`, or
 * `b-<token>@bounces.<domain>` / `@RETURN_PATH_HOST`) with a valid token is a report about that message; an address of
 * an inbound domain (its MX record found) goes where its most specific route says; anything else is refused, a domain
 * whose MX record no check has found yet as a domain that is not inbound here.
 */
export async function resolveRecipient(db: Db, address: string, returnPathHost: string, domains: DomainRoutes = uncached(db, true)): Promise<Target> {
  const lower = address.toLowerCase();
  const at = lower.lastIndexOf('@');
  const local = lower.slice(0, at);
  const domain = lower.slice(at + 1);
  if (at < 1 || !domain) throw new Refusal(550, '5.1.3 bad recipient address', 'recipient');

  const returnPath = domain.startsWith('bounces.') || (returnPathHost !== '' && domain === returnPathHost);
  if (LOOKS_VERP.test(local) || (returnPath && VERP_LOCAL.test(local))) {
    const messageId = messageOfVerp(LOOKS_VERP.test(local) ? lower : `x+${local}@${domain}`);
    if (!messageId || !(await db.message.findUnique({ where: { id: messageId }, select: { id: true } }))) {
      throw new Refusal(550, '5.1.1 no such return path here', 'recipient');
    }
    return { kind: 'report', address: lower, messageId };
  }

  const inbound = await domains(domain);
  if (!inbound) throw new Refusal(550, `5.7.1 ${domain} does not receive mail here`, 'domain');
  const matched = matchRoute(inbound.routes, local);
  if (!matched) throw new Refusal(550, `5.1.1 <${lower}>: no such recipient here`, 'recipient');
  if (matched.route.action === 'reject') throw new Refusal(550, `5.7.1 <${lower}>: mail to this address is refused`, 'rejected');
  return { kind: 'route', address: lower, accountId: inbound.accountId, domain: inbound.name, route: matched.route, hash: matched.hash };
}
