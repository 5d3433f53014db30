import { Router } from 'express';
import type { Db, Tx } from '../../../../core/src/db';
import { idParam, validate } from '../../../../core/src/validate';
import { addDomain, getDomain, listDomains, removeDomain, rotateDomain, verifyDomain, type DomainView } from '../../../../core/src/domains';
import { domainInput, domainsQuery } from '../../../../core/src/domains/schema';
import { domainInboundInput, setDomainInbound } from '../../../../core/src/mx/routes';
import { domainChange } from '../../../../core/src/changes';
import { audit } from '../../middleware/audit';
import { scopeOf } from '../../middleware/admin';
import { methodNotAllowed } from '../../middleware/errors';

/** Sending domains of docs/domains.md (under /admin/api). Private keys never appear in an answer. */
export function domainsRouter(db: Db): Router {
  const router = Router();
  const scope = (query: unknown) => validate<{ account?: number }>(domainsQuery, query).account;

  router
    .route('/domains')
    .post(async (req, res) => {
      const input = validate<{ account: number; name: string }>(domainInput, req.body);
      res.status(201).json({ ok: true, domain: await audit(req, res)(db, { action: 'create', resource: 'domain', after: (d) => d, account: input.account }, (db) => addDomain(db, input)) });
    })
    .get(async (req, res) => {
      res.json({ ok: true, domains: await listDomains(db, scopeOf(res, scope(req.query))) });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id')
    .get(async (req, res) => {
      res.json({ ok: true, domain: await getDomain(db, validate(idParam, req.params.id), scope(req.query)) });
    })
    .patch(async (req, res) => {
      const { inbound } = validate<{ inbound: boolean }>(domainInboundInput, req.body);
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      res.json({ ok: true, domain: await audit(req, res)(db, domainChange('update', id, account), (db) => setDomainInbound(db, id, inbound, account)) });
    })
    .delete(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      await audit(req, res)(db, { ...domainChange('delete', id, account), after: undefined }, (db) => removeDomain(db, id, account));
      res.json({ ok: true });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id/verify')
    .post(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      // DNS answers are awaited outside any transaction; the check's writes and the entry commit together
      const commit = (work: (db: Db) => Promise<DomainView>) => audit(req, res)(db, domainChange('verify', id, account), work);
      res.json({ ok: true, domain: await verifyDomain(db, id, { account, commit }) });
    })
    .all(methodNotAllowed);

  router
    .route('/domains/:id/rotate')
    .post(async (req, res) => {
      const [id, account] = [validate(idParam, req.params.id), scope(req.query)];
      res.json({ ok: true, domain: await audit(req, res)(db, domainChange('rotate', id, account), (db) => rotateDomain(db, id, account)) });
    })
    .all(methodNotAllowed);

  return router;
}
