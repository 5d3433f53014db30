import { listTemplates } from '../../../core/src/templates/service';
import path from 'node:path';
import express, { Router } from 'express';
import type { Db } from '../../../core/src/db';
import type { MailboxCache } from '../../../core/src/sending/mailbox';
import { requireKey, type KeyAuthenticator } from '../middleware/auth';
import type { AuthFailures } from '../middleware/failures';
import { methodNotAllowed } from '../middleware/errors';

const SWAGGER_UI = path.dirname(require.resolve('swagger-ui-dist/package.json'));

/** Only what /docs needs of swagger-ui-dist: its bundle and stylesheet, from node_modules (no CDN). */
const ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png'];

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>mailservice API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
<link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
<div id="docs"><noscript><p>This page renders <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> with JavaScript; the document itself is plain JSON.</p></noscript></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null: swagger-ui would otherwise send the document to validator.swagger.io
const INIT = `window.ui = SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#docs', validatorUrl: null, deepLinking: true });\n`;

const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * docs/operator.md: GET /api/v1/openapi.json, without a key; with one (checked as on every route: 401 for a bad one),
 * the document as that key sees it (`openApiDocumentFor`: its mailbox's `from`, today's `send_at` range). Mounted on
 * the app at its path, not through a router every request enters (a router ahead of /api/v1 cost each send about 3% of
 * the API's CPU).
 */
export function openApiHandler(db: Db, auth: KeyAuthenticator, failures: AuthFailures, mailboxes: MailboxCache): express.RequestHandler {
  // loaded on the first request: the converter and the schemas' walk cost every API process start otherwise
  const load = () => import('../openapi/document');
  const loadKeyed = () => import('../openapi/keyed-document');
  const keyed = requireKey(auth, failures);
  return async (req, res) => {
    if (!req.get('authorization')) return void res.set('Cache-Control', 'no-cache').json((await load()).openApiDocument());
    // throws the 401 for a missing, malformed or unknown key (counted as a failure of the client's address)
    await keyed(req, res, () => {});
    const mailbox = await mailboxes.sendingMailbox(db, res.locals.key.mailboxId);
    const templates = (await listTemplates(db, res.locals.key.accountId, 'template')).map((t) => ({ id: t.id, alias: t.alias, required: t.required }));
    res.set({ 'Cache-Control': 'private, no-cache', Vary: 'Authorization' }).json((await loadKeyed()).openApiDocumentFor(mailbox.address, new Date(), templates));
  };
}

/** GET /docs (mounted at /docs) rendering the document from the installed swagger-ui-dist. */
export function docsRouter(): Router {
  const router = Router();
  router.use((_req, res, next) => {
    res.set({ 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' });
    next();
  });
  router
    .route('/')
    .get((_req, res) => {
      res.type('html').send(PAGE);
    })
    .all(methodNotAllowed);
  router
    .route('/init.js')
    .get((_req, res) => {
      res.type('js').send(INIT);
    })
    .all(methodNotAllowed);
  router
    .route('/assets/:file')
    .get((req, res, next) => {
      const file = String(req.params.file);
      // an asset not served: 404, as any unknown path
      if (!ASSETS.includes(file)) return next('route');
      res.sendFile(path.join(SWAGGER_UI, file), { maxAge: '1d' });
    })
    .all(methodNotAllowed);
  return router;
}
