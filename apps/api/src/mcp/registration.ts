/**
 * How an MCP tool is registered and answers (mcp/tools.ts registers them): the key's scope checked as its HTTP route
 * checks it, an argument the tool does not name refused, every answer and refusal in the HTTP API's words, and a call
 * of a tool the server does not have refused as the MCP specification asks.
 */
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { ApiKey } from '../../../../generated/prisma/client';
import { Forbidden } from '../../../core/src/errors';
import { audited, type AuditContext } from '../../../core/src/audit';
import type { Db } from '../../../core/src/db';
import { refusalOf, type Refusal } from '../middleware/errors';

export type Answer = Record<string, unknown>;
type Args = Record<string, unknown>;
interface ToolConfig {
  title: string;
  description: string;
  inputSchema: Record<string, z.ZodTypeAny>;
}

/**
 * registerTool without its generic inference: inferring the handler's argument type from the zod shapes costs the
 * type checker gigabytes (the SDK's zod v3/v4 compatibility types); the arguments are validated by the API anyway.
 * An argument the tool does not name is refused with 400 as the HTTP API refuses an unknown field, never dropped: a
 * shape is passed on as an object that keeps unknown keys (zod strips them by default), and the handler runs only when
 * there is none. A tool whose schema is an object already hands its arguments whole to the API's validation.
 */
export function tool(tools: Tools, name: string, config: ToolConfig, handler: (args: Args) => Promise<CallToolResult>): void {
  const { server, key, answer } = tools;
  // a key outside the tool's scope gets the refusal the HTTP API answers (docs/teams.md)
  const scope = TOOL_SCOPES[name];
  const reads = READ_TOOLS.has(name) && key.scopes.includes('read');
  const change = TOOL_CHANGES[name];
  const recorded: typeof handler = change ? async (args) => tools.record(change, await handler(args)) : handler;
  const run: typeof handler = scope && !key.scopes.includes(scope) && !reads ? () => answer(() => Promise.reject(new Forbidden(`this key lacks the scope ${scope}`))) : recorded;
  const shape = config.inputSchema;
  const whole = shape instanceof z.ZodType;
  const inputSchema = whole ? shape : (z.object(shape).passthrough() as unknown as Record<string, z.ZodTypeAny>);
  const checked = (args: Args) => {
    const unknown = whole ? undefined : Object.keys(args ?? {}).find((k) => !Object.hasOwn(shape, k));
    return unknown === undefined ? run(args) : Promise.resolve(unknownArgument(unknown));
  };
  (server.registerTool as unknown as (name: string, config: ToolConfig, handler: (args: Args) => Promise<CallToolResult>) => void).call(
    server,
    name,
    { ...config, inputSchema },
    checked,
  );
}

/** The refusal of an argument a tool does not name, in the words of the HTTP API's validation (joi's). */
function unknownArgument(name: string): CallToolResult {
  const body = toolRefusal({ status: 400, headers: {}, message: `${name} is not allowed` });
  return { isError: true, structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** What a tool's registration needs: the request's server, its key, and how a tool answers. */
export interface Tools {
  server: McpServer;
  key: ApiKey;
  answer: (work: () => Promise<Answer>) => Promise<CallToolResult>;
  record: (change: ToolChange, result: CallToolResult) => Promise<CallToolResult>;
}

/** What a changing tool's audit entry says it did (docs/teams.md); the tools not named here change nothing. */
interface ToolChange {
  action: string;
  resource: string;
}
const TOOL_CHANGES: Record<string, ToolChange> = {
  send_email: { action: 'send', resource: 'send' },
  send_batch: { action: 'send-batch', resource: 'send' },
  cancel_send: { action: 'cancel', resource: 'send' },
  reschedule_send: { action: 'reschedule', resource: 'send' },
  add_subscriber: { action: 'subscribe', resource: 'subscriber' },
  remove_subscriber: { action: 'unsubscribe', resource: 'subscriber' },
  add_prospects: { action: 'add', resource: 'prospect' },
  report_prospect_state: { action: 'report-state', resource: 'prospect' },
};

/**
 * A changing tool's audit entry, `via: mcp` with the key as actor: written once its change is committed (the public
 * API's operations batch their writes and reach Redis, as the admin API's few changes that do; docs/teams.md). A
 * refusal changes nothing and a replay (the same idempotency key) nothing again: neither writes one.
 */
export async function recordChange(db: Db, context: AuditContext, key: ApiKey, change: ToolChange, result: CallToolResult, answer: Tools['answer']): Promise<CallToolResult> {
  const body = result.structuredContent as { replayed?: unknown; id?: unknown; send?: { id?: unknown } } | undefined;
  if (result.isError || !body || body.replayed === true) return result;
  const id = typeof body.id === 'string' ? body.id : typeof body.send?.id === 'string' ? body.send.id : undefined;
  try {
    await audited(db, context, { ...change, id, account: key.accountId, after: () => body }, () => Promise.resolve(result));
    return result;
  } catch (err) {
    return answer(() => Promise.reject(err));
  }
}

/** The key scope each tool needs, as its HTTP route does (middleware/auth.ts); the reading ones also pass with `read`. */
const TOOL_SCOPES: Record<string, string> = {
  send_email: 'send',
  send_batch: 'send',
  get_send_status: 'send',
  cancel_send: 'send',
  reschedule_send: 'send',
  list_lists: 'subscribers',
  add_subscriber: 'subscribers',
  remove_subscriber: 'subscribers',
  verify_addresses: 'subscribers',
  list_inbound: 'inbound',
  list_campaigns: 'prospects',
  add_prospects: 'prospects',
  get_prospect: 'prospects',
  report_prospect_state: 'prospects',
};
const READ_TOOLS = new Set(['get_send_status', 'list_lists', 'list_inbound', 'list_campaigns', 'get_prospect']);

/** The MCP request a tool runs for: its request id (X-Request-Id, on the log lines), method and path. */
export interface McpRequest {
  requestId: string;
  method: string;
  path: string;
  /** the client's address, for the audit log */
  ip?: string | null;
}

/**
 * A refusal as a tool result's structured content: the HTTP answer's `{ok:false, error}` with the status HTTP would
 * answer, `retry_after` (seconds) where HTTP sends Retry-After (an outage, a limit), and `request_id` for a fault or an
 * outage (the id its log lines carry).
 */
export function toolRefusal(refusal: Refusal): Answer {
  const retryAfter = refusal.headers['Retry-After'];
  return {
    ok: false,
    error: refusal.message,
    status: refusal.status,
    ...(retryAfter === undefined ? {} : { retry_after: Number(retryAfter) }),
    ...(refusal.requestId === undefined ? {} : { request_id: refusal.requestId }),
  };
}

/**
 * A result: the HTTP answer as structured content and the same JSON as text (the MCP specification's advice for
 * structured content); a refusal is an isError result worded by the API's one error mapper (middleware/errors.ts).
 */
export async function answerFor(request: McpRequest, work: () => Promise<Answer>): Promise<CallToolResult> {
  let body: Answer;
  let isError = false;
  try {
    body = await work();
  } catch (err) {
    body = toolRefusal(refusalOf(err, request.requestId, request));
    isError = true;
  }
  return { ...(isError ? { isError } : {}), structuredContent: body, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/**
 * A call of a tool this server does not have (an unknown name, or a campaign tool for a key without the permission) is
 * a JSON-RPC error -32602 (Invalid params), as the MCP specification asks, not a tool result with isError: the SDK's
 * own handler turns every error into a result, so the name is checked before it runs.
 */
export function refuseUnknownTools(server: McpServer): McpServer {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, (request: { params?: { name?: unknown } }, extra: unknown) => Promise<unknown>> })._requestHandlers;
  const registered = (server as unknown as { _registeredTools: Record<string, unknown> })._registeredTools;
  const call = handlers.get('tools/call');
  if (!call || !registered) throw new Error('the MCP SDK no longer keeps its handlers where refuseUnknownTools looks: update it');
  handlers.set('tools/call', async (request, extra) => {
    const name = request.params?.name;
    if (typeof name !== 'string' || !Object.hasOwn(registered, name)) {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${String(name)}`);
    }
    return call(request, extra);
  });
  return server;
}
