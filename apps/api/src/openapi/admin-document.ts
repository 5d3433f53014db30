import type Joi from 'joi';
import { accountInput } from '../../../core/src/accounts/schema';
import { keyInput } from '../../../core/src/auth/schema';
import { importQuery } from '../../../core/src/imports/schema';
import { inboundQuery } from '../../../core/src/inbound/schema';
import { entriesQuery } from '../../../core/src/keyset';
import { mailboxChange, mailboxInput } from '../../../core/src/mailboxes/schema';
import { campaignChanges, campaignInput } from '../../../core/src/outreach/schema';
import { messagesQuery } from '../../../core/src/sending/schema';
import { listChanges, listInput, subscribersQuery } from '../../../core/src/subscribers/schema';
import { accountQuery, idParam, listingQuery } from '../../../core/src/validate';
import { statsQuery } from '../../../core/src/analytics/stats';
import { audienceQuery, broadcastChanges, broadcastInput, broadcastsQuery } from '../../../core/src/broadcasts/schema';
import { messageIdParam } from '../../../core/src/sending/message-actions';
import { prospectFilter } from '../../../core/src/operator/prospects';
import { messageSearchQuery } from '../../../core/src/operator/search';
import { deliveriesQuery, webhookChanges, webhookInput, webhooksQuery } from '../../../core/src/webhooks/schema';
import { previewInput, restoreInput, templateChanges, templateInput, templatesQuery, testSendInput } from '../../../core/src/templates/schema';
import { domainInput, domainsQuery } from '../../../core/src/domains/schema';
import { trackingDomainInput, trackingDomainsQuery } from '../../../core/src/tracking-domains/schema';
import { domainInboundInput, mxMessageIdParam, routeInput, routePatch, routesQuery } from '../../../core/src/mx/routes';
import { userChange, userInput, usersQuery } from '../../../core/src/teams/schema';
import { secondFactorQuery, secondFactorRequirement } from '../../../core/src/second-factor/schema';
import { auditQuery } from '../../../core/src/audit/schema';
import { operationId, queryParameters, toJsonSchema, type JsonSchema } from './document';

/**
 * One operation of the admin API (docs/api.md): the joi schemas its route validates the request with, and what it
 * answers. test/operator/allow.test.ts holds this table to the routers both ways: every operation here is served (no
 * 405), every route served is here, and a method not here answers 405 with `Allow` naming the ones that are.
 */
interface AdminOperation {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  summary: string;
  body?: Joi.Schema;
  query?: Joi.Schema;
  /** the status of success and the key that carries the answer beside `ok` (none: `{ok: true}` alone) */
  answer: { status: 200 | 201 | 202; key?: string };
  /** the answer is a CSV file, not JSON */
  csv?: boolean;
  /** the answer is NDJSON, one object a line */
  ndjson?: boolean;
  /** the body is a file (CSV or NDJSON), read as it streams in */
  file?: boolean;
  /** the `{id}` of the path when it is not a row number (a message's UUID) */
  idParam?: Joi.Schema;
}

const ok = (key?: string) => ({ status: 200 as const, key });
const created = (key: string) => ({ status: 201 as const, key });

export const ADMIN_OPERATIONS: AdminOperation[] = [
  { method: 'get', path: '/openapi.json', summary: 'This document', answer: ok() },

  { method: 'post', path: '/accounts', summary: 'Create an account', body: accountInput, answer: created('account') },
  { method: 'get', path: '/accounts', summary: 'Every account', answer: ok('accounts') },

  { method: 'post', path: '/mailboxes', summary: 'Create a mailbox', body: mailboxInput, answer: created('mailbox') },
  { method: 'get', path: '/mailboxes', summary: 'Every mailbox (never a password)', query: listingQuery, answer: ok('mailboxes') },
  { method: 'patch', path: '/mailboxes/{id}', summary: 'Change a mailbox', body: mailboxChange, answer: ok('mailbox') },
  { method: 'post', path: '/mailboxes/{id}/test', summary: 'Try its SMTP (and IMAP) login; nothing is sent', answer: ok('smtp') },

  { method: 'post', path: '/keys', summary: 'Create an API key (the token is in this answer only)', body: keyInput, answer: created('key') },
  { method: 'get', path: '/keys', summary: 'Every API key (a hint of the token, never the token)', query: listingQuery, answer: ok('keys') },
  { method: 'delete', path: '/keys/{id}', summary: 'Revoke a key on every API process', answer: ok('key') },

  { method: 'post', path: '/users', summary: 'Invite a user with a role (answers the user and invite_url, also emailed)', body: userInput, answer: created('user') },
  { method: 'get', path: '/users', summary: 'The users (of an account)', query: usersQuery, answer: ok('users') },
  { method: 'patch', path: '/users/{id}', summary: "Change a user's role (applies at their next request)", body: userChange, answer: ok('user') },
  { method: 'delete', path: '/users/{id}', summary: 'Remove a user and end their sessions', answer: ok('user') },
  { method: 'post', path: '/users/{id}/signout', summary: 'End every session of the user', answer: ok('sessions') },
  { method: 'get', path: '/users/second-factor', summary: "Whether the account requires a second factor, and each of its users' factors", query: secondFactorQuery, answer: ok('second_factor') },
  { method: 'post', path: '/users/second-factor', summary: 'Require a second factor of the account\'s users (or stop)', body: secondFactorRequirement, answer: ok('second_factor') },
  { method: 'delete', path: '/users/{id}/second-factor', summary: "Remove a user's second factors (a lost device) and end their sessions", answer: ok('factors') },
  { method: 'get', path: '/audit', summary: 'The audit log in keyset pages (`next`: the cursor of the following page)', query: auditQuery, answer: ok('entries') },
  { method: 'get', path: '/audit.ndjson', summary: 'The audit log as NDJSON, oldest first', query: auditQuery, answer: ok(), ndjson: true },

  { method: 'post', path: '/lists', summary: 'Create a list', body: listInput, answer: created('list') },
  { method: 'get', path: '/lists', summary: "An account's lists", query: accountQuery, answer: ok('lists') },
  { method: 'get', path: '/lists/{id}', summary: 'A list, with its hosted form and its welcome series (per step: waiting, sent, ended)', answer: ok('list') },
  { method: 'patch', path: '/lists/{id}', summary: 'Change a list (never its key)', body: listChanges, answer: ok('list') },
  { method: 'get', path: '/lists/{id}/subscribers', summary: "A list's subscribers in keyset pages", query: subscribersQuery, answer: ok('subscribers') },
  { method: 'get', path: '/lists/{id}/subscribers.csv', summary: "A list's subscribers as CSV (only status filters)", query: subscribersQuery, answer: ok(), csv: true },
  { method: 'get', path: '/subscribers/{id}/consent', summary: "A subscriber and their consent ledger, oldest first (docs/preferences.md)", answer: ok('consent') },
  { method: 'get', path: '/subscribers/{id}/consent/export', summary: "Everything held on a subscriber with their consent ledger, as a JSON file", answer: ok('consent') },
  { method: 'post', path: '/lists/{id}/import', summary: 'Import subscribers from a CSV or NDJSON file', query: importQuery, file: true, answer: { status: 202, key: 'import' } },
  { method: 'get', path: '/imports/{id}', summary: "An import's progress and refused lines", answer: ok('import') },

  { method: 'post', path: '/campaigns', summary: 'Create an outreach campaign', body: campaignInput, answer: created('campaign') },
  { method: 'get', path: '/campaigns', summary: "An account's campaigns", query: accountQuery, answer: ok('campaigns') },
  { method: 'get', path: '/campaigns/{id}', summary: 'A campaign with its steps', answer: ok('campaign') },
  { method: 'patch', path: '/campaigns/{id}', summary: 'Change a campaign', body: campaignChanges, answer: ok('campaign') },
  { method: 'get', path: '/campaigns/{id}/stats', summary: "A campaign's numbers", answer: ok('stats') },
  { method: 'get', path: '/campaigns/{id}/prospects', summary: "A campaign's prospects, newest first, by status and step (keyset pages)", query: prospectFilter, answer: ok('prospects') },

  { method: 'get', path: '/messages', summary: 'The latest messages', query: messagesQuery, answer: ok('messages') },
  { method: 'get', path: '/messages/search', summary: 'Find messages by recipient, domain, subject words, id or Message-ID, status and dates (keyset pages)', query: messageSearchQuery, answer: ok('messages') },
  { method: 'get', path: '/messages/{id}', summary: "A message's story: state changes, each attempt with its SMTP answer, events and webhook deliveries, headers", idParam: messageIdParam, answer: ok('message') },
  { method: 'post', path: '/messages/{id}/retry', summary: 'Try a deferred or failed message again now (409 otherwise)', idParam: messageIdParam, answer: ok('message') },
  { method: 'post', path: '/messages/{id}/cancel', summary: 'Cancel a message not yet claimed (queued or deferred; 409 otherwise)', idParam: messageIdParam, answer: ok('message') },

  { method: 'get', path: '/suppressions', summary: "An account's suppressed addresses in keyset pages", query: entriesQuery, answer: ok() },
  { method: 'delete', path: '/suppressions/{id}', summary: 'Remove a suppression', answer: ok() },
  { method: 'get', path: '/stop-list', summary: "An account's stop list in keyset pages", query: entriesQuery, answer: ok() },
  { method: 'delete', path: '/stop-list/{id}', summary: 'Remove a stop-list entry', answer: ok() },

  { method: 'post', path: '/webhooks', summary: 'Create a webhook endpoint (the secret is in this answer)', body: webhookInput, answer: created('webhook') },
  { method: 'get', path: '/webhooks', summary: 'The webhook endpoints', query: webhooksQuery, answer: ok('webhooks') },
  { method: 'patch', path: '/webhooks/{id}', summary: 'Change a webhook endpoint', body: webhookChanges, answer: ok('webhook') },
  { method: 'delete', path: '/webhooks/{id}', summary: 'Delete a webhook endpoint', answer: ok() },
  { method: 'post', path: '/webhooks/{id}/rotate', summary: 'A new signing secret (in this answer)', answer: ok('webhook') },
  { method: 'get', path: '/webhooks/{id}/deliveries', summary: "A webhook's latest delivery attempts", query: deliveriesQuery, answer: ok('deliveries') },

  { method: 'post', path: '/broadcasts', summary: 'Create a broadcast, in draft', body: broadcastInput, answer: created('broadcast') },
  { method: 'get', path: '/broadcasts', summary: 'Broadcasts, newest first', query: broadcastsQuery, answer: ok('broadcasts') },
  { method: 'post', path: '/broadcasts/audience', summary: "How many of a list an audience takes now (the snapshot's own rule)", body: audienceQuery, answer: ok('count') },
  { method: 'get', path: '/broadcasts/{id}', summary: 'A broadcast', answer: ok('broadcast') },
  { method: 'patch', path: '/broadcasts/{id}', summary: 'Send, pause, cancel or change a broadcast', body: broadcastChanges, answer: ok('broadcast') },
  { method: 'get', path: '/broadcasts/{id}/links', summary: "Clicks per link of a broadcast", answer: ok('links') },

  { method: 'get', path: '/inbound', summary: 'The emails the IMAP reader handled, newest first; with status, the MX\'s messages in that state (docs/mx.md)', query: inboundQuery, answer: ok('messages') },
  { method: 'get', path: '/stats', summary: 'Daily counters of a range', query: statsQuery, answer: ok('days') },
  { method: 'get', path: '/delivery/status', summary: 'Messages by status and the oldest queued age, from Postgres', answer: ok() },

  { method: 'post', path: '/templates', summary: 'Create a template or a layout (400 naming the line when it does not parse)', body: templateInput, answer: created('template') },
  { method: 'get', path: '/templates', summary: 'Templates and layouts: of the account named, else of every account the caller may read', query: templatesQuery, answer: ok('templates') },
  { method: 'get', path: '/templates/{id}', summary: 'A template', answer: ok('template') },
  { method: 'patch', path: '/templates/{id}', summary: 'Change a template (a new version)', body: templateChanges, answer: ok('template') },
  { method: 'delete', path: '/templates/{id}', summary: 'Delete a template no broadcast, step or template uses (409 otherwise)', answer: ok() },
  { method: 'get', path: '/templates/{id}/versions', summary: 'The kept versions (the last 20), newest first', answer: ok('versions') },
  { method: 'post', path: '/templates/{id}/restore', summary: 'A kept version as the next version', body: restoreInput, answer: ok('template') },
  { method: 'post', path: '/templates/{id}/preview', summary: 'Render with variables: {ok, subject, html, text} (422 naming what is wrong)', body: previewInput, answer: ok('subject') },
  { method: 'post', path: '/templates/{id}/test', summary: 'Send one rendered email to an address', body: testSendInput, answer: { status: 202, key: 'message' } },
  { method: 'post', path: '/domains', summary: 'Add a sending domain: its DKIM keys are made, its records to publish answered', body: domainInput, answer: created('domain') },
  { method: 'get', path: '/domains', summary: 'Sending domains with their records and status', query: domainsQuery, answer: ok('domains') },
  { method: 'get', path: '/domains/{id}', summary: 'A sending domain (404 for another account with ?account=)', query: domainsQuery, answer: ok('domain') },
  { method: 'delete', path: '/domains/{id}', summary: 'Remove a sending domain and its keys', query: domainsQuery, answer: ok() },
  { method: 'post', path: '/domains/{id}/verify', summary: 'Check its records in DNS now', query: domainsQuery, answer: ok('domain') },
  { method: 'post', path: '/domains/{id}/rotate', summary: 'New DKIM keys, published beside the current ones; signing moves once DNS shows them', query: domainsQuery, answer: ok('domain') },
  { method: 'post', path: '/tracking-domains', summary: 'Add a tracking domain: answers the CNAME to publish; a certificate is ordered once DNS shows it', body: trackingDomainInput, answer: created('tracking_domain') },
  { method: 'get', path: '/tracking-domains', summary: 'Tracking domains with their status, what DNS answered and their certificate', query: trackingDomainsQuery, answer: ok('tracking_domains') },
  { method: 'get', path: '/tracking-domains/{id}', summary: 'A tracking domain (404 for another account with ?account=)', query: trackingDomainsQuery, answer: ok('tracking_domain') },
  { method: 'delete', path: '/tracking-domains/{id}', summary: 'Remove a tracking domain and its certificate; links fall back to PUBLIC_URL', query: trackingDomainsQuery, answer: ok() },
  { method: 'post', path: '/tracking-domains/{id}/verify', summary: 'Check its CNAME now, and order its certificate when one is due', query: trackingDomainsQuery, answer: ok('tracking_domain') },
  { method: 'patch', path: '/domains/{id}', summary: 'Turn a verified domain inbound (its mail taken by the MX, docs/mx.md) or back', query: domainsQuery, body: domainInboundInput, answer: ok('domain') },
  { method: 'post', path: '/routes', summary: 'Add an inbound route: what the MX does with mail to a local part of an inbound domain', body: routeInput, answer: created('route') },
  { method: 'get', path: '/routes', summary: 'Inbound routes', query: routesQuery, answer: ok('routes') },
  { method: 'get', path: '/routes/{id}', summary: 'An inbound route', query: routesQuery, answer: ok('route') },
  { method: 'patch', path: '/routes/{id}', summary: 'Change an inbound route', query: routesQuery, body: routePatch, answer: ok('route') },
  { method: 'delete', path: '/routes/{id}', summary: 'Remove an inbound route', query: routesQuery, answer: ok() },
  { method: 'post', path: '/inbound/{id}/release', summary: 'A held message goes on to the customer as inbound.received', idParam: mxMessageIdParam, answer: ok() },
  { method: 'post', path: '/inbound/{id}/drop', summary: 'A held message is dropped, never delivered', idParam: mxMessageIdParam, answer: ok() },
  { method: 'post', path: '/inbound/{id}/replay', summary: 'A delivered message\'s inbound.received is sent again', idParam: mxMessageIdParam, answer: ok() },
];

const REFUSAL: JsonSchema = {
  type: 'object',
  required: ['ok', 'error'],
  properties: { ok: { const: false }, error: { type: 'string', description: 'what was wrong, in words' } },
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 202: 'Accepted: a worker applies it', 400: 'A field is malformed (named in error)',
  401: 'The admin token is missing or wrong', 404: 'No such row', 409: 'Conflict with what is stored', 413: 'The body is over the limit',
  422: 'The template does not render with these variables (named in error)',
  415: 'A body type or encoding the route does not take', 429: 'Too many failed tokens from this client (Retry-After)', 500: 'Internal error',
  503: 'Unavailable for now: the database is unreachable, or too many request bodies are being read at once (Retry-After); nothing was done',
};

function answerSchema(op: AdminOperation): JsonSchema {
  const properties: JsonSchema = { ok: { const: true } };
  if (op.answer.key) properties[op.answer.key] = {};
  return { type: 'object', required: ['ok', ...(op.answer.key ? [op.answer.key] : [])], properties };
}

let built: JsonSchema | undefined;

/** The OpenAPI 3.1 document of the admin API (GET /admin/api/openapi.json), built once from the table above. */
export function adminOpenApiDocument(): JsonSchema {
  if (built) return built;
  const idSchema = toJsonSchema(idParam);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of ADMIN_OPERATIONS) {
    const refusals = [400, 401, 429, 500, 503];
    if (op.path.includes('{id}')) refusals.push(404);
    if (op.method !== 'get') refusals.push(404, 409);
    if (op.body || op.file) refusals.push(413, 415);
    if (op.path.startsWith('/templates/{id}/')) refusals.push(422);
    const success = op.csv || op.ndjson
      ? { description: STATUS_TEXT[op.answer.status], content: { [op.csv ? 'text/csv' : 'application/x-ndjson']: { schema: { type: 'string' } } } }
      : { description: STATUS_TEXT[op.answer.status], content: { 'application/json': { schema: answerSchema(op) } } };
    const responses: Record<string, JsonSchema> = { [op.answer.status]: success };
    for (const status of [...new Set(refusals)].sort((a, b) => a - b)) {
      responses[status] = { description: STATUS_TEXT[status], content: { 'application/json': { schema: { $ref: '#/components/schemas/Refusal' } } } };
    }
    const parameters: JsonSchema[] = [];
    if (op.path.includes('{id}')) parameters.push({ name: 'id', in: 'path', required: true, schema: op.idParam ? toJsonSchema(op.idParam) : idSchema });
    if (op.query) parameters.push(...queryParameters(op.query));
    const file = { schema: { type: 'string' } };
    const requestBody = op.body
      ? { required: true, content: { 'application/json': { schema: toJsonSchema(op.body) } } }
      : op.file
        ? { required: true, description: 'CSV (a header line naming the columns) or NDJSON (one object a line)', content: { 'text/csv': file, 'application/x-ndjson': file } }
        : undefined;
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      operationId: operationId(op.method, op.path),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }
  built = {
    openapi: '3.1.0',
    info: {
      title: 'mailservice admin API',
      version: '1',
      description: 'The operator\'s control plane (docs/api.md). Authenticate with `Authorization: Bearer <ADMIN_TOKEN>`. A method a path does not take answers 405 with `Allow`.',
    },
    servers: [{ url: '/admin/api' }],
    security: [{ adminToken: [] }],
    paths,
    components: { schemas: { Refusal: REFUSAL }, securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } } },
  };
  return built;
}
