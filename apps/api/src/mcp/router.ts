import { Router, type RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import type { ApiState } from '../state';
import { MethodNotAllowed } from '../../../core/src/errors';
import { requireKey, type KeyAuthenticator } from '../middleware/auth';
import type { AuthFailures } from '../middleware/failures';
import { lazy } from '../../../core/src/lazy';

/**
 * The MCP SDK and the tools, loaded by the first MCP request: with zod they are about 26 MB of an API process's memory,
 * which an API that never serves MCP does not carry.
 */
const mcp = lazy(() => ({
  Transport: (require('@modelcontextprotocol/sdk/server/streamableHttp.js') as typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js')).StreamableHTTPServerTransport,
  mcpServer: (require('./tools') as typeof import('./tools')).mcpServer,
}));

/**
 * docs/mcp.md: MCP over Streamable HTTP at /mcp, stateless (a server and transport per request, no session), so
 * any API process can answer any request. The key is checked before the MCP layer sees anything: 401 JSON otherwise.
 */
export function mcpRouter(db: Db, auth: KeyAuthenticator, failures: AuthFailures, json: RequestHandler, state: ApiState): Router {
  const router = Router();
  router.post('/', requireKey(auth, failures), json, async (req, res) => {
    const { Transport, mcpServer } = mcp();
    const server = mcpServer(db, state, res.locals.key, { requestId: String(res.locals.requestId ?? ''), method: req.method, path: req.originalUrl, ip: req.ip ?? null });
    const transport = new Transport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  // stateless: no server-initiated stream (GET) and no session to end (DELETE)
  router.all('/', requireKey(auth, failures), () => {
    throw new MethodNotAllowed('this MCP endpoint is stateless: POST JSON-RPC messages to it', { Allow: 'POST' });
  });
  return router;
}
