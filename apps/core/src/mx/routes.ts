import type { InboundRoute } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { getDomain, refreshRecords, type DomainView } from '../domains';
import { BadRequest, Conflict, NotFound } from '../errors';
import { dbId, Joi } from '../validate';
import type { RouteRow } from './repository';
import { accountWhere, type AccountScope } from '../account-scope';

/**
 * Inbound routes (docs/mx.md): for a verified domain turned inbound, what the MX does with mail to a local part.
 * `match` is a local part (`support`), `name+*` (any `name+tag`, the tag handed on as `hash`) or `*`; the most specific
 * match wins: the exact local part, then `name+*`, then `*`.
 */
export const ROUTE_ACTIONS = ['webhook', 'hold', 'reject'] as const;
const MATCH = /^(\*|[^@\s*+]+(\+\*)?|[^@\s*]+)$/;

export const routeInput = Joi.object({
  account: dbId().required(),
  // the domain's id, or its name
  domain: Joi.alternatives(dbId(), Joi.string().max(253)).required(),
  match: Joi.string().max(64).lowercase().pattern(MATCH, 'a local part, name+* or *').required(),
  action: Joi.string().valid(...ROUTE_ACTIONS).required(),
  endpoint: dbId().allow(null),
  spam_threshold: Joi.number().min(-1000).max(1000).allow(null),
});

export const routePatch = Joi.object({
  match: Joi.string().max(64).lowercase().pattern(MATCH, 'a local part, name+* or *'),
  action: Joi.string().valid(...ROUTE_ACTIONS),
  endpoint: dbId().allow(null),
  spam_threshold: Joi.number().min(-1000).max(1000).allow(null),
}).min(1);

export const routesQuery = Joi.object({ account: dbId() });

export const domainInboundInput = Joi.object({ inbound: Joi.boolean().required() });

export interface RouteView {
  id: number;
  account: number;
  domain: number;
  match: string;
  action: (typeof ROUTE_ACTIONS)[number];
  endpoint: number | null;
  spam_threshold: number | null;
  created_at: Date;
}

const view = (r: InboundRoute): RouteView => ({
  id: r.id,
  account: r.accountId,
  domain: r.domainId,
  match: r.match,
  action: r.action,
  endpoint: r.endpointId,
  spam_threshold: r.spamThreshold,
  created_at: r.createdAt,
});

/** The account's domain by id or name; NotFound otherwise. */
async function domainOf(db: Tx, account: number, domain: number | string) {
  const found = await db.domain.findFirst({ where: typeof domain === 'number' ? { id: domain, accountId: account } : { name: domain.toLowerCase().replace(/\.$/, ''), accountId: account } });
  if (!found) throw new NotFound(`no domain ${domain} in account ${account}`);
  return found;
}

async function checkEndpoint(db: Tx, account: number, endpoint: number | null | undefined): Promise<void> {
  if (endpoint === null || endpoint === undefined) return;
  if (!(await db.webhook.findFirst({ where: { id: endpoint, accountId: account } }))) throw new BadRequest(`endpoint: no webhook ${endpoint} in account ${account}`);
}

type RouteInput = { account: number; domain: number | string; match: string; action: RouteView['action']; endpoint?: number | null; spam_threshold?: number | null };

export async function addRoute(db: Db, input: RouteInput): Promise<RouteView> {
  const domain = await domainOf(db, input.account, input.domain);
  await checkEndpoint(db, input.account, input.endpoint);
  if (await db.inboundRoute.findUnique({ where: { domainId_match: { domainId: domain.id, match: input.match } } })) {
    throw new Conflict(`domain ${domain.name} has a route for ${input.match} already`);
  }
  const row = await db.inboundRoute.create({
    data: { accountId: input.account, domainId: domain.id, match: input.match, action: input.action, endpointId: input.endpoint ?? null, spamThreshold: input.spam_threshold ?? null },
  });
  return view(row);
}

async function load(db: Tx, id: number, account?: number): Promise<InboundRoute> {
  const row = await db.inboundRoute.findUnique({ where: { id } });
  if (!row || (account !== undefined && row.accountId !== account)) throw new NotFound(`no inbound route ${id}`);
  return row;
}

export async function listRoutes(db: Tx, account?: AccountScope): Promise<RouteView[]> {
  const rows = await db.inboundRoute.findMany({ where: accountWhere(account), orderBy: { id: 'asc' } });
  return rows.map(view);
}

export async function getRoute(db: Tx, id: number, account?: number): Promise<RouteView> {
  return view(await load(db, id, account));
}

export async function changeRoute(db: Db, id: number, patch: Partial<Omit<RouteInput, 'account' | 'domain'>>, account?: number): Promise<RouteView> {
  const row = await load(db, id, account);
  await checkEndpoint(db, row.accountId, patch.endpoint);
  if (patch.match && patch.match !== row.match && (await db.inboundRoute.findUnique({ where: { domainId_match: { domainId: row.domainId, match: patch.match } } }))) {
    throw new Conflict(`the domain has a route for ${patch.match} already`);
  }
  const updated = await db.inboundRoute.update({
    where: { id },
    data: { match: patch.match, action: patch.action, endpointId: patch.endpoint, spamThreshold: patch.spam_threshold },
  });
  return view(updated);
}

export async function removeRoute(db: Db, id: number, account?: number): Promise<void> {
  await load(db, id, account);
  await db.inboundRoute.delete({ where: { id } });
}

/**
 * PATCH /admin/api/domains/:id {inbound}: a verified domain's records then list its MX, and the MX takes its mail once a
 * check finds that record (the worker checks a domain just turned inbound at once; `verify` checks on demand). Turned
 * off, it forgets the record was found: turned on again, the record is checked again before mail is taken.
 */
export async function setDomainInbound(db: Db, id: number, inbound: boolean, account?: number): Promise<DomainView> {
  const domain = await getDomain(db, id, account);
  if (inbound && domain.status !== 'verified') throw new Conflict(`domain ${domain.name} is ${domain.status}: only a verified domain can receive mail`);
  if (inbound !== domain.inbound) {
    await db.domain.update({ where: { id }, data: inbound ? { inbound, nextCheckAt: new Date() } : { inbound, inboundMxFoundAt: null } });
  }
  // an inbound domain's records list its MX (MX_HOSTNAME), checked in DNS with the others
  return refreshRecords(db, id);
}

/** The route that takes `local` among a domain's routes, and the hash (the part after +), or null. */
export function matchRoute(routes: RouteRow[], local: string): { route: RouteRow; hash: string | null } | null {
  const plus = local.indexOf('+');
  const base = plus < 0 ? local : local.slice(0, plus);
  const hash = plus < 0 ? null : local.slice(plus + 1) || null;
  const exact = routes.find((r) => r.match === local);
  if (exact) return { route: exact, hash: null };
  const tagged = plus < 0 ? undefined : routes.find((r) => r.match === `${base}+*`);
  if (tagged) return { route: tagged, hash };
  const any = routes.find((r) => r.match === '*');
  return any ? { route: any, hash } : null;
}

/** GET /admin/api/inbound?status=: the MX's messages in that state, newest first (docs/mx.md). */
export const MX_STATUSES = ['delivered', 'held', 'dropped', 'report'] as const;
export const mxMessageIdParam = Joi.string().guid().required().label('id');
