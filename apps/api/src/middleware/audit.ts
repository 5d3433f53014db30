import type { Request, Response } from 'express';
import { auditedAfter, auditedChange, type AuditContext, type Change } from '../../../core/src/audit';
import type { Db } from '../../../core/src/db';
import { Forbidden } from '../../../core/src/errors';
import { can, permissionFor } from '../../../core/src/teams';

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
    // the admin API's `permitted` (and the console's own check) held the account the request names (else any of the
    // person's); a change by id is held here to the account of the row it changes
    refuses: (account) => {
      const member = via === 'console' ? res.locals.session?.user : res.locals.actor !== 'admin-token' ? res.locals.actor : undefined;
      const permission = via === 'console' ? permissionFor(req.method, req.path) : res.locals.permission;
      return member && permission && !can(member, permission, account) ? `needs ${permission}${account === undefined ? '' : ` in account ${account}`}` : null;
    },
  };
}

/**
 * A console form (or an admin API call) that names a row but changes nothing (a login test, a preview, a dry run): held
 * to the row's account as a change is (403 naming the permission), so a person of another account cannot use the row.
 */
export function holdTo(req: Request, res: Response, account: number, via: 'admin-api' | 'console' = 'console'): void {
  const refusal = auditContext(req, res, via).refuses?.(account);
  if (refusal) throw new Forbidden(refusal);
}

/**
 * The one way a route or a console form makes a change: `work` (a domain function over the db it is given) runs in a
 * transaction with the change's audit entry, so both are committed or neither.
 */
export function audit(req: Request, res: Response, via: 'admin-api' | 'console' = 'admin-api') {
  const context = auditContext(req, res, via);
  return <T>(db: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedChange(db, context, change, work);
}

/** `audit` for a change that waits on ACME between its writes (core/audit `auditedAfter`). */
export function auditAfter(req: Request, res: Response, via: 'admin-api' | 'console' = 'admin-api') {
  const context = auditContext(req, res, via);
  return <T>(db: Db, change: Change<NoInfer<T>>, work: (db: Db) => Promise<T>): Promise<T> => auditedAfter(db, context, change, work);
}

// the descriptions of changes by id live once, in core (changes/index.ts), for the admin API, the console and the CLI
export { campaignChange, importChange, mailboxChange, ownerIn } from '../../../core/src/changes';
