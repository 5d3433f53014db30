import { Router } from 'express';
import type { Db, Tx } from '../../../../core/src/db';
import { idParam, validate } from '../../../../core/src/validate';
import { addTrackingDomain, getTrackingDomain, listTrackingDomains, removeTrackingDomain, verifyTrackingDomain } from '../../../../core/src/tracking-domains';
import { trackingDomainInput, trackingDomainsQuery } from '../../../../core/src/tracking-domains/schema';
import { audit, auditAfter } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** Tracking domains of docs/tracking-domains.md (under /admin/api). Private keys never appear in an answer. */
export function trackingDomainsRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(trackingDomainsQuery, query).account;

  router
    .route('/tracking-domains')
    .post(async (req, res) => {
      const input = validate<{ account: number; name: string }>(trackingDomainInput, req.body);
      res.status(201).json({ ok: true, tracking_domain: await audit(req, res)(db, { action: 'create', resource: 'tracking-domain', after: (d) => d, account: input.account }, (db) => addTrackingDomain(db, input)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, tracking_domains: await listTrackingDomains(db, scopeOf(res, scope(req.query))) });
    })
    .all(methodNotAllowed);

  router
    .route('/tracking-domains/:id')
    .get(async (req, res) => {
      res.json({ ok: true, tracking_domain: await getTrackingDomain(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .delete(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      await audit(req, res)(db, { action: 'delete', resource: 'tracking-domain', id, before: (tx) => getTrackingDomain(tx, id, account) }, (db) => removeTrackingDomain(db, id, account));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/tracking-domains/:id/verify')
    .post(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      // a check may order a certificate, whose challenge is answered from committed rows: the entry follows (auditedAfter)
      const change = { action: 'verify', resource: 'tracking-domain', id, before: (tx: Tx) => getTrackingDomain(tx, id, account), after: (d: unknown) => d };
      res.json({ ok: true, tracking_domain: await auditAfter(req, res)(db, change, (db) => verifyTrackingDomain(db, id, { account })) });
    })
    .all(methodNotAllowed);

  return router;
}
