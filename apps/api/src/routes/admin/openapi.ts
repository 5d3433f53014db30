import { Router } from 'express';
import { methodNotAllowed } from '../../middleware/errors';

/** GET /admin/api/openapi.json: the admin API's OpenAPI document (openapi/admin-document.ts), behind the admin token. */
export function openApiRouter(): Router {
  const router = Router();
  router
    .route('/openapi.json')
    .get(async (_req, res) => {
      // loaded on the first request, as the public document is: the schemas' walk costs every API process start otherwise
      const { adminOpenApiDocument } = await import('../../openapi/admin-document');
      res.set('Cache-Control', 'no-cache').json(adminOpenApiDocument());
    })
    .all(methodNotAllowed);
  return router;
}
