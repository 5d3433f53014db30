import type { Request, Response } from 'express';
import { auditedAfter, auditedChange, type AuditContext, type Change } from '../../../core/src/audit';
import type { Db, Tx } from '../../../core/src/db';
import { can } from '../../../core/src/teams';

/**
 * Who makes a change, for its audit entry (docs/teams.md): the admin API's actor (a person or the admin token) or the
 * console's session, with the client's address and the request's id.
 */
export function auditContext(req: Request, res: Response, via: 'admin-api' | 'console'): AuditContext {
  const person = via === 'console' ? res.locals.session?.user : res.locals.actor === 'admin-token' ? undefined : res.locals.actor;
  return {
    actor: person ? { kind: 'user', id: person.id, label: person.email } : { kind: 'admin-token', label: 'admin token' },
    via,
    ip: req.ip ?? req.socket.remoteAddress ?? null,
    requestId: res.locals.requestId ? String(res.locals.requestId) : null,
    // the admin API's `permitted` checked the account the request names (else any of the person's); a change by id is
    // held here to the account of the row it changes (the console's forms: not yet, docs/teams.md)
    refuses: (account) => {
      const member = via === 'admin-api' && res.locals.actor !== 'admin-token' ? res.locals.actor : undefined;
      const permission = res.locals.permission;
      return member && permission && !can(member, permission, account) ? `needs ${permission}${account === undefined ? '' : ` in account ${account}`}` : null;
    },
  };
}

/**
 * The one way a route or a console form makes a change: `work` (a domain function over the db it is given) runs in a
 * transaction with the change's audit entry, so both are committed or neither.
 */
export function audit(req: Request, res: Response, via: 'admin-api' | 'console' = 'admin-api') {
  const context = auditContext(req, res, via);
  return <T>(db: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedChange(db, context, change, work);
}

/** `audit` for the few changes that reach Redis after their commit (core/audit `auditedAfter`). */
export function auditAfter(req: Request, res: Response, via: 'admin-api' | 'console' = 'admin-api') {
  const context = auditContext(req, res, via);
  return <T>(db: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedAfter(db, context, change, work);
}

type Owned = 'list' | 'campaign' | 'broadcast' | 'message' | 'suppression' | 'stopEntry';

/** The account of a row whose view does not name it, read in the change's transaction. */
export const ownerIn =
  (model: Owned, id: number | string) =>
  async (tx: Tx): Promise<number | undefined> =>
    (await (tx[model] as unknown as { findUnique(args: object): Promise<{ accountId: number | null } | null> }).findUnique({ where: { id }, select: { accountId: true } }))?.accountId ?? undefined;
