import { listInboundOf } from '../../../core/src/mx/inbound-page';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ApiKey } from '../../../../generated/prisma/client';
import { addProspectsTo, findProspect, listCampaignsOf, reportProspectState } from '../../../core/src/outreach/operations';
import { listListsOf, subscribe, unsubscribe } from '../../../core/src/subscribers/operations';
import type { Db } from '../../../core/src/db';
import { LOST_REASONS, OUTCOME_STATES } from '../../../core/src/outreach/outcomes';
import { acceptSend, findSend, MAX_WAIT_SECONDS } from '../../../core/src/sending/accept';
import { acceptBatch } from '../../../core/src/batches';
import { parseIdempotencyKey } from '../../../core/src/idempotency';
import { cancelSend, rescheduleSend } from '../../../core/src/sending/cancel';
import { parseReschedule } from '../../../core/src/sending/schema';
import { VERIFY_MODES } from '../../../core/src/verify';
import { verifyAddresses } from '../../../core/src/verify/operations';
import type { ApiState } from '../state';
import type { AuditContext } from '../../../core/src/audit';
import { answerFor, recordChange, refuseUnknownTools, tool, type Answer, type McpRequest, type Tools } from './registration';

/**
 * The MCP tools of docs/mcp.md. Each calls the operation its HTTP route calls, with the same arguments as the
 * request's body or query, so limits, quotas, idempotency and permissions are the API's own. The zod shapes describe
 * the fields for a model (and check their JSON types); every other rule is the API's validation, with its words.
 */

const address = 'an email address, optionally with a display name: "Ann <ann@example.com>"';

const sendShape = {
  to: z
    .union([z.string(), z.array(z.string())])
    .describe(`the recipient: ${address}; or an array of 1 to 50 of them (duplicates count once). Each gets a separate copy.`),
  subject: z.string().optional().describe('the subject line, 1 to 300 characters; required unless a template is given'),
  text: z.string().optional().describe('the plain-text body; give text, html or both, or a template'),
  html: z.string().optional().describe('the HTML body; give text, html or both, or a template'),
  template: z
    .union([z.number().int(), z.string()])
    .optional()
    .describe("a stored template's id or alias (list them with GET /api/v1/templates), rendered instead of subject, text and html"),
  variables: z
    .record(z.unknown())
    .optional()
    .describe("the template's variables, a JSON object (name to value); a variable the template requires and that is missing is refused"),
  from: z.string().optional().describe("the sender; its address must be this key's mailbox, the display name may be anything"),
  reply_to: z.string().optional().describe(`where replies go: ${address}`),
  headers: z.record(z.string()).optional().describe('custom headers, names starting with X- only, one line each'),
  attachments: z
    .array(z.object({ filename: z.string(), content: z.string().describe('the file, base64'), content_type: z.string().optional() }))
    .optional()
    .describe('files to attach; the whole email (bodies and attachments) must stay under 1 MB'),
  send_at: z.string().optional().describe('ISO 8601 time to send at, up to 30 days ahead; omit to send now'),
  metadata: z.record(z.unknown()).optional().describe('your own data kept with the send (at most 50 keys)'),
  idempotency_key: z
    .string()
    .optional()
    .describe('1 to 200 printable ASCII characters; retrying with the same key and arguments within 24 h returns the first answer and sends nothing again'),
  wait_seconds: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(`wait up to this many seconds (at most ${MAX_WAIT_SECONDS}) for every copy to be delivered or fail, then answer final statuses (HTTP Prefer: wait=N)`),
};

/** A message of send_batch: send_email's fields, without waiting. */
const { wait_seconds: _wait, ...batchMessageShape } = sendShape;

const listKey = z.string().describe("the list's key, as list_lists shows it");
const email = z.string().describe('the email address');
const campaign = z.number().int().describe("the campaign's id, as list_campaigns shows it");
const fieldValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const verify = z
  .enum(VERIFY_MODES)
  .optional()
  .describe('verify the address first (docs/verification.md): block_undeliverable adds nobody whose address is undeliverable; flag only keeps the result on the row');

const prospect = z.object({
  email: z.string().nullable().optional().describe('the contact address; prospects are matched by email (lower-cased)'),
  site: z.string().nullable().optional().describe('the website; used to match a prospect without email (host name, no www.)'),
  name: z.string().nullable().optional().describe('the person or organisation, up to 200 characters'),
  fields: z.record(fieldValue).optional().describe('values for {{fields.X}} in the campaign steps (at most 50)'),
});

/** The server for one request of one key: campaign and prospect tools only when the key has the prospects permission. */
export function mcpServer(db: Db, state: ApiState, key: ApiKey, request: McpRequest): McpServer {
  const server = new McpServer({ name: 'mailservice', version: '1.0.0' });
  const answer = (work: () => Promise<Answer>) => answerFor(request, work);
  const context: AuditContext = { actor: { kind: 'key', id: key.id, label: `${key.prefix}…${key.lastFour}` }, via: 'mcp', ip: request.ip ?? null, requestId: request.requestId || null };
  const tools: Tools = { server, key, answer, record: (change, result) => recordChange(db, context, key, change, result, answer) };

  tool(
    tools,
    'send_email',
    {
      title: 'Send an email',
      description:
        "Sends an email from this key's mailbox, one copy per recipient (POST /api/v1/send). Counts against the key's daily limit; suppressed and stop-listed recipients are skipped. An argument not listed here (cc, bcc...) is refused, as POST /send refuses it.",
      // the arguments reach the API's validation whole, so an unknown one is refused with its words, not dropped
      inputSchema: z.object(sendShape).passthrough() as unknown as Record<string, z.ZodTypeAny>,
    },
    ({ idempotency_key, wait_seconds, ...body }) =>
      answer(async () => {
        const idempotencyKey = parseIdempotencyKey(idempotency_key === undefined ? undefined : String(idempotency_key));
        const result = await acceptSend(db, state.sending, key, body, { idempotencyKey, waitSeconds: Number(wait_seconds ?? 0) });
        return { ...result.body, replayed: result.replayed } as unknown as Answer;
      }),
  );

  tool(
    tools,
    'send_batch',
    {
      title: 'Send many emails in one call',
      description:
        "Sends up to 100 different emails from this key's mailbox in one call (POST /api/v1/send/batch). Each message is checked alone: its result says ok with the send's id, or the error that refused it, in the order given. The valid ones count once against the key's daily limit, all or nothing.",
      inputSchema: {
        messages: z
          .array(z.object(batchMessageShape))
          .describe('1 to 100 messages, each with the fields of send_email; a message may carry its own idempotency_key'),
        idempotency_key: sendShape.idempotency_key.describe('for the whole batch: retrying with the same key and messages within 24 h returns the first answer and sends nothing again'),
      },
    },
    ({ idempotency_key, messages }) =>
      answer(async () => {
        const idempotencyKey = parseIdempotencyKey(idempotency_key === undefined ? undefined : String(idempotency_key));
        const result = await acceptBatch(db, state.sending, key, { messages }, { idempotencyKey });
        return { ...result.body, replayed: result.replayed } as unknown as Answer;
      }),
  );

  tool(
    tools,
    'get_send_status',
    {
      title: 'Status of a send',
      description: 'The current status of a send and each of its copies: queued, sending, sent, deferred, failed or bounced (GET /api/v1/send/:id).',
      inputSchema: { id: z.string().describe('the send id that send_email answered') },
    },
    ({ id }) => answer(async () => (await findSend(db, key.accountId, String(id))) as unknown as Answer),
  );

  tool(
    tools,
    'cancel_send',
    {
      title: 'Cancel a send',
      description:
        'Withdraws a send (POST /api/v1/send/:id/cancel): every copy not yet on its way becomes cancelled and is never sent. Refused (409) once a copy is being sent or was sent.',
      inputSchema: { id: z.string().describe('the send id that send_email answered') },
    },
    ({ id }) => answer(async () => ({ ok: true, send: await cancelSend(db, key.accountId, String(id)) }) as unknown as Answer),
  );

  tool(
    tools,
    'reschedule_send',
    {
      title: 'Move a send to another time',
      description:
        'Moves a scheduled send (PATCH /api/v1/send/:id) while all its copies are still queued: they go out at send_at instead. Refused (409) once a copy was tried.',
      inputSchema: {
        id: z.string().describe('the send id that send_email answered'),
        send_at: z.string().nullable().describe('the new ISO 8601 time, up to 30 days ahead; null or a time past sends now'),
      },
    },
    ({ id, send_at }) => answer(async () => ({ ok: true, send: await rescheduleSend(db, key.accountId, String(id), parseReschedule({ send_at })) }) as unknown as Answer),
  );

  // a test key has the send tools only, as it has the send routes only (docs/sandbox.md)
  if (key.mode === 'test') return refuseUnknownTools(server);

  tool(
    tools,
    'list_lists',
    { title: 'Newsletter lists', description: "The account's lists with their keys and active subscriber counts (GET /api/v1/lists).", inputSchema: {} },
    () => answer(() => listListsOf(db, key)),
  );

  tool(
    tools,
    'add_subscriber',
    {
      title: 'Add a subscriber',
      description:
        'Adds a person to a list (POST /api/v1/subscribers). Answers status: pending (a confirmation email went out), active, exists, gone (they unsubscribed before) or suppressed.',
      inputSchema: {
        list: listKey,
        email,
        name: z.string().optional().describe('their name, up to 200 characters'),
        tags: z.union([z.array(z.string()), z.string()]).optional().describe('up to 20 tags; a string is split on whitespace'),
        fields: z.record(z.union([z.string(), z.number(), z.boolean()])).optional().describe('custom fields used in the list\'s emails, up to 30'),
        confirmed: z.boolean().optional().describe('true when the person already confirmed elsewhere: skips the confirmation email'),
        verify,
      },
    },
    (args) => answer(() => subscribe(db, state.adds, state.verifier, key, args)),
  );

  tool(
    tools,
    'remove_subscriber',
    {
      title: 'Unsubscribe a person',
      description: 'Unsubscribes a person from a list (DELETE /api/v1/subscribers). Answers status: unsubscribed, gone or absent.',
      inputSchema: { list: listKey, email },
    },
    (args) => answer(() => unsubscribe(db, key, args)),
  );

  tool(
    tools,
    'list_inbound',
    {
      title: 'Received emails',
      description:
        "The emails read from the account's mailboxes that are replies or messages (not bounce reports), oldest first after `after` (GET /api/v1/inbound): from, to, subject, text, html, attachments with signed URLs, and the message, send, prospect and campaign each one answers. With source mx: the messages the MX delivered (inbound.received: envelope, route, hash, reply_text, auth results, spam score, raw_url). Pass the answer's `next` as `after` to read on.",
      inputSchema: {
        source: z.enum(['imap', 'mx']).optional().describe("imap (default): the mailboxes' emails; mx: the messages the MX took for the account's inbound domains"),
        after: z
          .union([z.number().int().min(0), z.string().uuid()])
          .optional()
          .describe('the id to read after: absent from the start, else the previous answer\'s next (imap: a number, mx: a message id)'),
        limit: z.number().int().min(1).max(100).optional().describe('how many, up to 100 (default 50)'),
        mailbox: z.number().int().positive().optional().describe('one mailbox of the account only'),
      },
    },
    // as JSON: dates as the HTTP answer writes them
    (args) => answer(async () => JSON.parse(JSON.stringify(await listInboundOf(db, key, args))) as Answer),
  );

  tool(
    tools,
    'verify_addresses',
    {
      title: 'Verify email addresses',
      description:
        "Checks 1 to 100 addresses before writing to them (POST /api/v1/verify): syntax, the domain's MX, disposable domains, role addresses, free webmail, the account's own suppressions and bounces (and the mailbox, when the operator enabled the probe). Answers per address deliverable, risky, undeliverable or unknown, with reasons and checks.",
      inputSchema: { emails: z.array(z.string()).describe('1 to 100 email addresses; a malformed one is answered undeliverable') },
    },
    (args) => answer(() => verifyAddresses(db, state.verifier, key, args)),
  );

  if (!key.prospects) return refuseUnknownTools(server);

  tool(
    tools,
    'list_campaigns',
    { title: 'Outreach campaigns', description: "The account's outreach campaigns (GET /api/v1/campaigns).", inputSchema: {} },
    () => answer(() => listCampaignsOf(db, key)),
  );

  tool(
    tools,
    'add_prospects',
    {
      title: 'Add prospects to a campaign',
      description:
        'Adds 1 to 100 prospects to a campaign; a running campaign starts writing to them (POST /api/v1/prospects). Answers counts and, per item, added, updated, same, stopped or invalid.',
      inputSchema: { campaign, prospects: z.array(prospect).describe('1 to 100 prospects, each with an email or a site'), verify },
    },
    (args) => answer(() => addProspectsTo(db, state.verifier, key, args)),
  );

  tool(
    tools,
    'get_prospect',
    {
      title: 'Look up a prospect',
      description: "A prospect's status, step, stage and reply (GET /api/v1/prospects). Give email or site, not both.",
      inputSchema: {
        campaign,
        email: z.string().optional().describe("the prospect's email address"),
        site: z.string().optional().describe("the prospect's website, for prospects without email"),
      },
    },
    (args) => answer(() => findProspect(db, key, args)),
  );

  tool(
    tools,
    'report_prospect_state',
    {
      title: 'Report what a prospect did',
      description:
        'Tells the service an outcome (POST /api/v1/prospects/state): replied, agreed, lost (with a reason) or stop (never write again). No further step goes out after any of them. Give a state, a value, a url or some of them.',
      inputSchema: {
        campaign,
        email: z.string().describe("the prospect's email address"),
        state: z.enum(OUTCOME_STATES).optional().describe('replied, agreed, lost or stop'),
        reason: z.enum(LOST_REASONS).optional().describe('with lost only, and then required'),
        value: z.number().optional().describe('what the deal is worth, 0 to 1e12'),
        url: z
          .string()
          .optional()
          .describe('links campaigns: the http(s) page where the prospect put (or will put) the link; with agreed, or alone on an agreed or placed prospect. The service checks the page and marks the prospect placed when the link is there'),
      },
    },
    (args) => answer(() => reportProspectState(db, key, args)),
  );

  return refuseUnknownTools(server);
}
