import { Router } from 'express';
import type { Db } from '../../../core/src/db';
import { challengeAnswer } from '../../../core/src/tracking-domains/links';
import { methodNotAllowed } from '../middleware/errors';

/**
 * HTTP-01 (docs/tracking-domains.md): the CA asks http://<tracking domain>/.well-known/acme-challenge/<token> while a
 * certificate is ordered; any API process answers from Postgres, whichever worker ordered it.
 */
export function acmeChallengeRouter(db: Db): Router {
  const router = Router();
  router
    .route('/.well-known/acme-challenge/:token')
    .get(async (req, res) => {
      const answer = await challengeAnswer(db, req.params.token);
      res.status(answer === null ? 404 : 200).set({ 'Content-Type': 'text/plain', 'Cache-Control': 'no-store' }).send(answer ?? 'no such challenge');
    })
    .all(methodNotAllowed);
  return router;
}
