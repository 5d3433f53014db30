import { Router, type Response } from 'express';
import { listAudit, type AuditFilter } from '../../../../core/src/audit';
import { auditQuery } from '../../../../core/src/audit/schema';
import type { Db } from '../../../../core/src/db';
import { lagHeader, type Reads } from '../../../../core/src/replicas';
import { validate } from '../../../../core/src/validate';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/**
 * A person who is not an operator reads the log of the account they name (`permitted` checked their role in it), or
 * of every account where they hold audit.read; never the instance's own entries (no account).
 */
function scoped(res: Response, filter: AuditFilter & { account?: number }): AuditFilter {
  return { ...filter, account: scopeOf(res, filter.account, 'audit.read') };
}

/** /admin/api/audit (docs/teams.md): the audit log in keyset pages, and all of it (as filtered) as NDJSON. */
export function auditRouter(db: Db, reads: Reads): Router {
  const router = Router();
  router
    .route('/audit')
    .get(async (req, res) => {
      const { entries, next } = await listAudit(db, scoped(res, validate(auditQuery, req.query)));
      res.json({ ok: true, entries, next });
    })
    .all(methodNotAllowed);

  // oldest first, page after page, one entry a line: an export or a SIEM reads on from its last id with ?after=
  router
    .route('/audit.ndjson')
    .get(async (req, res) => {
      const filter = scoped(res, validate(auditQuery, req.query));
      // an export: from the replica when there is one (its lag in the header)
      res.type('application/x-ndjson').set(await lagHeader(reads));
      let after: number | null = filter.after ?? 0;
      while (after !== null) {
        const page = await listAudit(reads.db, { ...filter, before: undefined, after, limit: 500 });
        for (const entry of page.entries) res.write(`${JSON.stringify(entry)}\n`);
        after = page.next;
      }
      res.end();
    })
    .all(methodNotAllowed);
  return router;
}
