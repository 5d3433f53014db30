import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { Router, type RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import type { ApiState } from '../state';
import { MethodNotAllowed } from '../../../core/src/errors';
import { requireKey, type KeyAuthenticator } from '../middleware/auth';
import type { AuthFailures } from '../middleware/failures';
import { mcpServer } from './tools';

/**
 * docs/mcp.md: MCP over Streamable HTTP at /mcp, stateless (a server and transport per request, no session), so
 * any API process can answer any request. The key is checked before the MCP layer sees anything: 401 JSON otherwise.
 */
export function mcpRouter(db: Db, auth: KeyAuthenticator, failures: AuthFailures, json: RequestHandler, state: ApiState): Router {
  const router = Router();
  router.post('/', requireKey(auth, failures), json, async (req, res) => {
    const server = mcpServer(db, state, res.locals.key, { requestId: String(res.locals.requestId ?? ''), method: req.method, path: req.originalUrl });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
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
