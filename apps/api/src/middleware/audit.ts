import type { Request, Response } from 'express';
import type { AuditContext } from '../../../core/src/audit';

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
  };
}
