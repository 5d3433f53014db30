import type { Prisma } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { accountWhere, type AccountScope } from '../account-scope';
import { Forbidden } from '../errors';
import { iso } from '../validate';
import { deferring, runKept } from '../after-commit';

/**
 * The audit log (docs/teams.md): who changed what, written in the change's own transaction by `audited`, the one way
 * an audited change is made. Nothing here updates or deletes an entry (the table's trigger refuses both).
 */
export interface AuditActor {
  kind: 'user' | 'key' | 'admin-token';
  id?: number;
  /** a user's email, a key's hint, "admin token" */
  label: string;
}

export interface AuditContext {
  actor: AuditActor;
  via: 'admin-api' | 'console' | 'cli' | 'mcp';
  ip?: string | null;
  requestId?: string | null;
  /**
   * The actor's right to make this change in the account it turns out to belong to (a change by id names no account
   * until its row is read): answers the refusal's text when the actor lacks it. Absent: the caller checked already.
   */
  refuses?: (account: number | undefined) => string | null;
}

/** Refuses (403, the transaction rolled back) a change in an account the actor may not change. */
function hold(context: AuditContext, account: number | undefined): void {
  const refusal = context.refuses?.(account);
  if (refusal) throw new Forbidden(refusal);
}

export interface Change<T> {
  /** create, update, revoke, delete, ... */
  action: string;
  /** key, account, user, mailbox, ... */
  resource: string;
  /** the row as it was (read in the same transaction), for a change of an existing one */
  before?: (tx: Tx) => Promise<unknown>;
  /** the row as it is after, from the change's result (its view): `after` and, when it has one, `id` and `account` */
  after?: (result: T) => unknown;
  /** the account the change belongs to, when the `after` view does not say (as `account`) */
  account?: number | ((result: T) => number | undefined);
  /** the account, read in the transaction (a change by id whose views do not name it) */
  accountIn?: (tx: Tx) => Promise<number | null | undefined>;
  id?: string | number;
}

/** Names of fields whose values never reach the log. */
const SECRET = /pass(word)?|secret|token|private|credential|^smtp$|^imap$|refresh|access|invite_url|hash|Enc$/i;

/** A copy of `value` with every secret field's value shown as "[redacted]", and URL passwords too. */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value instanceof Date) return value.toISOString();
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET.test(k) && v !== null && v !== undefined && typeof v !== 'boolean' ? '[redacted]' : redact(v)]));
  }
  if (typeof value === 'string') return value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@/\s]+@/i, '$1:[redacted]@');
  return value;
}

const json = (value: unknown) => (value === undefined ? undefined : (redact(value) as Prisma.InputJsonValue));

/**
 * Runs `work` in a transaction and writes its audit entry in the same one: the change and its entry are committed
 * together or not at all.
 */
export async function audited<T>(db: Db, context: AuditContext, change: Change<NoInfer<T>>, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.$transaction(async (tx) => {
    const before = change.before ? await change.before(tx) : undefined;
    const owner = change.accountIn ? await change.accountIn(tx) : undefined;
    hold(context, owner ?? accountOfView(before));
    const result = await work(tx);
    const after = change.after ? change.after(result) : undefined;
    const fromAfter = (after ?? before ?? {}) as { id?: unknown; account?: unknown };
    const id = change.id ?? fromAfter.id;
    const account = (typeof change.account === 'function' ? change.account(result) : change.account) ?? owner ?? accountOfView(fromAfter);
    hold(context, account);
    await tx.auditEntry.create({
      data: {
        actorKind: context.actor.kind,
        actorId: context.actor.id,
        actorLabel: context.actor.label,
        via: context.via,
        action: change.action,
        resource: change.resource,
        resourceId: id === undefined || id === null ? null : String(id),
        accountId: account ?? null,
        before: json(before),
        after: json(after),
        ip: context.ip ?? null,
        requestId: context.requestId ?? null,
      },
    });
    return result;
    // a change that reaches a DNS or SMTP server on its way (a domain's check) may take longer than Prisma's 5 s
  }, { maxWait: 10_000, timeout: 60_000 });
}

/** The `account` a view names, if it names one. */
function accountOfView(view: unknown): number | undefined {
  const account = (view as { account?: unknown } | null | undefined)?.account;
  return typeof account === 'number' ? account : undefined;
}

/**
 * `audited` for a domain function that takes a `Db` (and may open its own transaction): it runs in the entry's, and
 * what it hands to `afterCommit` (a job queued, a cache dropped in Redis) runs once both are committed.
 */
export async function auditedChange<T>(db: Db, context: AuditContext, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> {
  const kept: Parameters<typeof runKept>[1] = [];
  const result = await audited<T>(db, context, change, (tx) => work(deferring(tx, kept)));
  await runKept(db, kept);
  return result;
}

/**
 * For a change that waits on a server outside between its writes (a tracking domain's certificate order, whose ACME
 * challenge is answered from committed rows): holding a transaction open for it is not an option, so its entry
 * is written at once after it instead. A change that only reaches Redis after its commit is `auditedChange`'s.
 */
export async function auditedAfter<T>(db: Db, context: AuditContext, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> {
  const before: unknown = change.before ? await change.before(db) : undefined;
  // committed before its entry: the actor's right is checked on the row's account first
  const owner = change.accountIn ? await change.accountIn(db) : undefined;
  hold(context, owner ?? accountOfView(before));
  const result = await work(db);
  // committed already: its entry is written whatever the account turns out to be, with what was read before (not again)
  const read = { before: change.before && (() => Promise.resolve(before)), accountIn: change.accountIn && (() => Promise.resolve(owner)) };
  await audited(db, { ...context, refuses: undefined }, { ...change, ...read }, () => Promise.resolve(result));
  return result;
}

export interface AuditView {
  id: number;
  at: string | null;
  actor: { kind: string; id: number | null; label: string };
  via: string;
  action: string;
  resource: string;
  resource_id: string | null;
  account: number | null;
  before: unknown;
  after: unknown;
  ip: string | null;
  request_id: string | null;
}

export interface AuditFilter {
  account?: AccountScope;
  actor?: string;
  action?: string;
  resource?: string;
  /** keyset: entries after this id (oldest first), or before it (newest first) */
  after?: number;
  before?: number;
  limit?: number;
}

export const AUDIT_PAGE = 100;

/**
 * A keyset page of entries (never OFFSET): oldest first after `after` (an export or a follower reads on from its last
 * id), or newest first before `before` (the console). `next` is the cursor of the following page, null on the last.
 */
export async function listAudit(db: Tx, filter: AuditFilter): Promise<{ entries: AuditView[]; next: number | null }> {
  const limit = filter.limit ?? AUDIT_PAGE;
  const newestFirst = filter.before !== undefined || filter.after === undefined;
  const rows = await db.auditEntry.findMany({
    where: {
      ...accountWhere(filter.account),
      ...(filter.actor ? { actorLabel: filter.actor.toLowerCase() === 'admin token' ? 'admin token' : filter.actor.toLowerCase() } : {}),
      ...(filter.action ? { action: filter.action } : {}),
      ...(filter.resource ? { resource: filter.resource } : {}),
      ...(filter.after !== undefined ? { id: { gt: BigInt(filter.after) } } : filter.before !== undefined ? { id: { lt: BigInt(filter.before) } } : {}),
    },
    orderBy: { id: newestFirst ? 'desc' : 'asc' },
    take: limit + 1,
  });
  const page = rows.slice(0, limit).map(auditView);
  return { entries: page, next: rows.length > limit ? page[page.length - 1]!.id : null };
}

function auditView(row: { id: bigint; at: Date; actorKind: string; actorId: number | null; actorLabel: string; via: string; action: string; resource: string; resourceId: string | null; accountId: number | null; before: unknown; after: unknown; ip: string | null; requestId: string | null }): AuditView {
  return {
    id: Number(row.id),
    at: iso(row.at),
    actor: { kind: row.actorKind, id: row.actorId, label: row.actorLabel },
    via: row.via,
    action: row.action,
    resource: row.resource,
    resource_id: row.resourceId,
    account: row.accountId,
    before: row.before ?? null,
    after: row.after ?? null,
    ip: row.ip,
    request_id: row.requestId,
  };
}
