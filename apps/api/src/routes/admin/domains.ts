import { Router } from 'express';
import type { Db } from '../../../../core/src/db';
import { idParam } from '../../../../core/src/admin-schemas';
import { validate } from '../../../../core/src/validate';
import { addDomain, getDomain, listDomains, removeDomain, rotateDomain, verifyDomain } from '../../../../core/src/domains';
import { domainInput, domainsQuery } from '../../../../core/src/domains/schemas';
import { domainInboundInput, setDomainInbound } from '../../../../core/src/mx/routes';
import { methodNotAllowed } from '../../middleware/errors';

/** Sending domains of docs/domains.md (under /admin/api). Private keys never appear in an answer. */
export function domainsRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(domainsQuery, query).account;

  router
    .route('/domains')
    .post(async (req, res) => {
      res.status(201).json({ ok: true, domain: await addDomain(db, validate(domainInput, req.body)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, domains: await listDomains(db, scope(req.query)) });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id')
    .get(async (req, res) => {
      res.json({ ok: true, domain: await getDomain(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .patch(async (req, res) => {
      const { inbound } = validate<{ inbound: boolean }>(domainInboundInput, req.body);
      res.json({ ok: true, domain: await setDomainInbound(db, validate(idParam, req.params.id), inbound, scope(req.query)) });
    })
    .delete(async (req, res) => {
      await removeDomain(db, validate(idParam, req.params.id), scope(req.query));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id/verify')
    .post(async (req, res) => {
      res.json({ ok: true, domain: await verifyDomain(db, validate(idParam, req.params.id), { account: scope(req.query) }) });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id/rotate')
    .post(async (req, res) => {
      res.json({ ok: true, domain: await rotateDomain(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .all(methodNotAllowed);

  return router;
}
