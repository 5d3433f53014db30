import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { idParam } from '../../../../core/src/admin-schemas';
import { validate } from '../../../../core/src/validate';
import { addTrackingDomain, getTrackingDomain, listTrackingDomains, removeTrackingDomain, verifyTrackingDomain } from '../../../../core/src/tracking-domains';
import { trackingDomainInput, trackingDomainsQuery } from '../../../../core/src/tracking-domains/schemas';
import { methodNotAllowed } from '../../middleware/errors';

/** Tracking domains of docs/tracking-domains.md (under /admin/api). Private keys never appear in an answer. */
export function trackingDomainsRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(trackingDomainsQuery, query).account;

  router
    .route('/tracking-domains')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, tracking_domain: await addTrackingDomain(db, validate(trackingDomainInput, req.body)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, tracking_domains: await listTrackingDomains(db, scope(req.query)) });
    })
    .all(methodNotAllowed);

  router
    .route('/tracking-domains/:id')
    .get(async (req, res) => {
      res.json({ ok: true, tracking_domain: await getTrackingDomain(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .delete(async (req, res) => {
      await removeTrackingDomain(db, validate(idParam, req.params.id), scope(req.query));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/tracking-domains/:id/verify')
    .post(async (req, res) => {
      res.json({ ok: true, tracking_domain: await verifyTrackingDomain(db, validate(idParam, req.params.id), { account: scope(req.query) }) });
    })
    .all(methodNotAllowed);

  return router;
}
