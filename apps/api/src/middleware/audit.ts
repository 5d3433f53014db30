import type { Request, Response } from 'express';
import { auditedAfter, auditedChange, type AuditContext, type Change } from '../../../core/src/audit';
import type { Db, Tx } from '../../../core/src/db';
import { findMailbox, mailboxView } from '../../../core/src/mailboxes';
import { getCampaign } from '../../../core/src/outreach/campaigns';
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
 * A console form that names a row by id but changes nothing (a login test, a preview): held to the row's account as a
 * change is (403 naming the permission), so a person of another account cannot use the row.
 */
export function holdTo(req: Request, res: Response, account: number): void {
  const refusal = auditContext(req, res, 'console').refuses?.(account);
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

/** A change of a campaign (the admin API's PATCH, the console's forms): its entry follows the commit (due steps). */
export const campaignChange = (id: number) => ({ action: 'update', resource: 'campaign', id, before: (tx: Tx) => getCampaign(tx, id), after: (c: unknown) => c, accountIn: ownerIn('campaign', id) });

/** A change of a mailbox: its entry follows the commit (a reconnected mailbox's waiting emails reach the queue). */
export const mailboxChange = (id: number) => ({ action: 'update', resource: 'mailbox', id, before: async (tx: Tx) => mailboxView(await findMailbox(tx, id)), after: (m: unknown) => m });

/** An import into a list: streamed on connections of its own and queued once committed, so its entry follows. */
export const importChange = (id: number, format: string) => ({ action: 'import', resource: 'list', id, after: (i: { id: number; status: string }) => ({ import: i.id, status: i.status, format }), accountIn: ownerIn('list', id) });
