import path from 'node:path';
import express, { Router } from 'express';

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

/** DESIGN section 9: GET /api/v1/openapi.json (no key) and GET /docs rendering it from the installed swagger-ui-dist. */
export function docsRouter(): Router {
  const router = Router();
  // built on the first request: the converter and the schemas' walk cost every API process start otherwise
  let document: Promise<object> | undefined;
  router.get('/api/v1/openapi.json', async (_req, res) => {
    document ??= import('../openapi/document').then((m) => m.openApiDocument());
    res.set('Cache-Control', 'no-cache').json(await document);
  });
  const headers: express.RequestHandler = (_req, res, next) => {
    res.set({ 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer' });
    next();
  };
  router.get('/docs', headers, (_req, res) => {
    res.type('html').send(PAGE);
  });
  router.get('/docs/init.js', headers, (_req, res) => {
    res.type('js').send(INIT);
  });
  router.get('/docs/assets/:file', headers, (req, res, next) => {
    const file = String(req.params.file);
    if (!ASSETS.includes(file)) return next();
    res.sendFile(path.join(SWAGGER_UI, file), { maxAge: '1d' });
  });
  return router;
}
