import parse from 'joi-to-json';
import type Joi from 'joi';
import { inboundPageQuery } from '../../../core/src/mx/inbound-page';
import { addProspectsInput, outcomeInput, prospectQuery } from '../../../core/src/outreach/schema';
import { MAX_WAIT_SECONDS } from '../../../core/src/sending/accept';
import { rescheduleSchema, sendSchema } from '../../../core/src/sending/schema';
import { batchDocumentSchema } from '../../../core/src/batches/schema';
import { DOCUMENTED, JSON_VALUE, NO_NUL } from '../../../core/src/validate';
import { subscriberInput, TAG_LENGTH_MAX, TAGS_MAX, unsubscribeInput } from '../../../core/src/subscribers/schema';
import * as answers from './answers';
import { keyTemplatesQuery } from '../../../core/src/templates/schema';
import { verifyQuery, verifyRequest } from '../../../core/src/verify/schema';

export type JsonSchema = Record<string, unknown>;

/** One operation of the public API: the joi schemas that validate its request and describe each of its answers. */
interface Operation {
  method: 'get' | 'post' | 'patch' | 'delete';
  path: string;
  summary: string;
  body?: Joi.Schema;
  query?: Joi.Schema;
  /** the prospects permission of the key (403 without it) */
  prospects?: boolean;
  /** takes an Idempotency-Key (docs/idempotency.md): 409 while the first request is in flight, 422 for another body */
  idempotent?: boolean;
  answers: Record<number, Joi.Schema>;
  /** a success that is not JSON: its status and media type (the body a string) */
  media?: { status: number; type: string };
  /** rules the server enforces in code, not in the joi schema, written into the request's schema here */
  rules?: (body: JsonSchema | undefined, parameters: JsonSchema[]) => JsonSchema[] | void;
}

const R = answers.refusal;
/**
 * Every operation may answer these: a malformed address (a bad %-escape, a NUL), no or a bad key, too many failed
 * keys from one client (docs/hardening.md), and a fault (with a request id in the message).
 */
const ALWAYS = { 400: R, 401: R, 429: R, 500: R, 503: R };
/** And every operation but the send routes: a test key (docs/sandbox.md) is refused there. */
const LIVE_ONLY: Record<number, Joi.Schema> = { 403: R };
/** And every operation that takes a JSON body: malformed JSON, over 1 MB, not UTF-8. */
const WITH_BODY = { 400: R, 413: R, 415: R };

export const OPERATIONS: Operation[] = [
  {
    method: 'post', path: '/send', summary: 'Send an email', body: sendSchema, idempotent: true,
    answers: { 200: answers.sendAnswer, 202: answers.sendAnswer, ...WITH_BODY, 403: R, 409: R, 422: R, 429: R },
    rules: () => {
      return [
        {
          name: 'Prefer', in: 'header', required: false, schema: { type: 'string', pattern: '^[ -~]*$' },
          description: `wait=N (RFC 7240, N up to ${MAX_WAIT_SECONDS}): answer once every copy is delivered or failed, or after N seconds (200 with the statuses then); see docs/sending.md`,
        },
      ];
    },
  },
  {
    method: 'post', path: '/send/batch', summary: 'Send up to 100 emails, each checked alone, the results in order', body: batchDocumentSchema, idempotent: true,
    answers: { 200: answers.batchAnswer, ...WITH_BODY, 403: R, 409: R, 422: R, 429: R },
  },
  { method: 'get', path: '/send/{id}', summary: 'A send and its messages', answers: { 200: answers.sendAnswer, 404: R } },
  {
    method: 'get', path: '/send/{id}/raw', summary: "A test key's message as the sandbox received it (by message id, or the id of a send of one message)",
    answers: { 404: R }, media: { status: 200, type: 'message/rfc822' },
  },
  {
    method: 'patch', path: '/send/{id}', summary: 'Move a send to another time while all its messages are queued', body: rescheduleSchema,
    answers: { 200: answers.sendChangeAnswer, ...WITH_BODY, 404: R, 409: R },
  },
  {
    method: 'post', path: '/send/{id}/cancel', summary: 'Cancel a send whose messages are not yet on their way',
    answers: { 200: answers.sendChangeAnswer, 404: R, 409: R },
  },
  { method: 'get', path: '/lists', summary: "The key's account's lists", answers: { 200: answers.listsAnswer } },
  { method: 'get', path: '/templates', summary: "The key's account's templates and layouts", query: keyTemplatesQuery, answers: { 200: answers.templatesAnswer } },
  {
    method: 'post', path: '/subscribers', summary: 'Add a subscriber, double opt-in', body: subscriberInput, idempotent: true,
    answers: { 200: answers.subscribeAnswer, ...WITH_BODY, 404: R, 429: R },
  },
  {
    method: 'delete', path: '/subscribers', summary: 'Unsubscribe; the fields as body or query', query: unsubscribeInput, idempotent: true,
    answers: { 200: answers.unsubscribeAnswer, ...WITH_BODY, 404: R },
    rules: (_body, parameters) => {
      // list and email come as query parameters or as the JSON body: neither place alone is required
      for (const p of parameters) if (p.in === 'query') Object.assign(p, { required: false, description: 'required here unless the JSON body gives it' });
    },
  },
  { method: 'get', path: '/campaigns', summary: "The key's account's campaigns", prospects: true, answers: { 200: answers.campaignsAnswer } },
  {
    method: 'post', path: '/prospects', summary: 'Add prospects to a campaign', body: addProspectsInput, prospects: true, idempotent: true,
    answers: { 200: answers.addProspectsAnswer, ...WITH_BODY, 404: R },
  },
  {
    method: 'get', path: '/prospects', summary: 'Look a prospect up', query: prospectQuery, prospects: true,
    answers: { 200: answers.prospectAnswer, 400: R, 404: R },
    rules: (_body, parameters) => {
      for (const p of parameters) if (p.name === 'email' || p.name === 'site') p.description = 'give email or site, not both (400 otherwise)';
    },
  },
  {
    method: 'post', path: '/prospects/state', summary: 'Report an outcome', body: outcomeInput, prospects: true, idempotent: true,
    answers: { 200: answers.prospectAnswer, ...WITH_BODY, 404: R, 409: R },
  },
  {
    method: 'post', path: '/verify', summary: 'Verify up to 100 addresses (docs/verification.md)', body: verifyRequest,
    answers: { 200: answers.verifyManyAnswer, ...WITH_BODY },
  },
  { method: 'get', path: '/verify', summary: 'Verify one address; a malformed one is undeliverable', query: verifyQuery, answers: { 200: answers.verifyAnswer, 400: R } },
  { method: 'get', path: '/inbound', summary: 'Received emails: the mailboxes\' (message.received), or with source=mx the MX\'s (inbound.received), oldest first after `after`', query: inboundPageQuery, answers: { 200: answers.inboundAnswer } },
];

/** joi-to-json names joi extensions by their type: the tags type of subscribers is an array of tags or one string of them. */
function fixExtensions(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(fixExtensions);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  if (object.type === 'tags') {
    const { type: _tags, ...rest } = object;
    // each tag is trimmed and must then be non-empty (so not only spaces), up to its length; up to TAGS_MAX of them
    const tag = { type: 'string', minLength: 1, maxLength: TAG_LENGTH_MAX, not: { pattern: '^\\s*$' } };
    const spaced = `tags separated by spaces (at most ${TAGS_MAX}, each up to ${TAG_LENGTH_MAX} characters)`;
    return { ...rest, anyOf: [{ type: 'array', maxItems: TAGS_MAX, items: tag }, { type: 'string', description: spaced }] };
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fixExtensions(v)]));
}

/**
 * What joi-to-json writes wrong about objects, corrected by walking the joi schema beside its output:
 * - `Joi.object()` with no keys takes any keys (joi's default), but is written closed and empty: it is opened;
 * - `.pattern(keySchema, value)` (a joi schema for the names) is written closed and empty: it becomes
 *   `additionalProperties` with the value's schema and `propertyNames` with the names' schema;
 * - `.pattern(regex, value)` also gets a property named after the regex's text: dropped (patternProperties says it);
 * - the branches of `when` (if/then/else) repeat `additionalProperties: false` with only the keys they mention, which
 *   no body can satisfy alongside the other keys: a branch only adds conditions, so it is left open;
 * - `.max(n)` / `.min(n)` of an object (how many keys) are not written: maxProperties / minProperties;
 * And about strings: joi refuses an empty string unless a schema allows it (`.allow('')`), which is minLength 1.
 */
function fixObjects(node: JsonSchema, schema: Joi.Schema | undefined): JsonSchema {
  const terms = (schema as unknown as { $_terms?: JoiTerms } | undefined)?.$_terms;
  const rule = (name: string) => (schema as unknown as { $_getRule(n: string): { args: { limit: number } } | undefined }).$_getRule(name);
  if (schema?.type === 'string' && node.type === 'string' && !(schema as unknown as { _valids?: Set<unknown> })._valids?.has('') && !rule('min') && !rule('length') && node.minLength === undefined) node.minLength = 1;
  // joi trims before it checks: a string of spaces is empty, and refused
  if (schema?.type === 'string' && node.type === 'string' && rule('trim') && !(schema as unknown as { _valids?: Set<unknown> })._valids?.has('')) {
    node.not = { pattern: '^\\s*$' };
  }
  if (schema?.type === 'alternatives' && Array.isArray(node.anyOf) && terms?.matches?.length === node.anyOf.length) {
    terms.matches.forEach((match, i) => match.schema && fixObjects((node.anyOf as JsonSchema[])[i]!, match.schema));
  }
  if (schema?.type === 'object' && terms) {
    const properties = (node.properties ?? {}) as Record<string, JsonSchema>;
    const patterns = terms.patterns ?? [];
    if (patterns.some((p) => p.regex)) for (const name of Object.keys(properties)) if (name.startsWith('/')) delete properties[name];
    const named = patterns.find((p) => p.schema && !p.regex);
    if (named) {
      node.additionalProperties = toJsonSchema(named.rule);
      node.propertyNames = toJsonSchema(named.schema!);
    } else if (!terms.keys && !patterns.length && node.additionalProperties === false) {
      node.additionalProperties = true;
    }
    for (const child of terms.keys ?? []) if (properties[child.key]) fixObjects(properties[child.key]!, child.schema);
    for (const child of terms.keys ?? []) {
      // `.when(sibling, {is: exist, then: optional, otherwise: required})`: required unless the sibling is given
      const when = (child.schema as unknown as { $_terms?: { whens?: JoiWhen[] | null } }).$_terms?.whens?.[0];
      const sibling = when?.ref?.path?.length === 1 ? when.ref.path[0] : undefined;
      if (sibling && when!.then?._flags?.presence === 'optional' && when!.otherwise?._flags?.presence === 'required') {
        (node.allOf = (node.allOf as JsonSchema[] | undefined) ?? []).push({ anyOf: [{ required: [child.key] }, { required: [sibling] }] });
        const property = properties[child.key];
        if (property) property.description = [property.description, `required unless \`${sibling}\` is given`].filter(Boolean).join('; ');
      }
    }
    const patternProperties = (node.patternProperties ?? {}) as Record<string, JsonSchema>;
    for (const p of patterns) if (p.regex && patternProperties[p.regex.source]) fixObjects(patternProperties[p.regex.source]!, p.rule);
    if (rule('max')) node.maxProperties = rule('max')!.args.limit;
    if (rule('min')) node.minProperties = rule('min')!.args.limit;
  }
  if (schema?.type === 'array' && node.items && terms?.items?.length === 1) fixObjects(node.items as JsonSchema, terms.items[0]);
  for (const branch of (node.allOf ?? []) as JsonSchema[]) {
    for (const part of ['then', 'else'] as const) if (branch[part]) delete (branch[part] as JsonSchema).additionalProperties;
  }
  return node;
}

interface JoiWhen {
  ref?: { path?: string[] };
  then?: { _flags?: { presence?: string } };
  otherwise?: { _flags?: { presence?: string } };
}

interface JoiTerms {
  keys?: { key: string; schema: Joi.Schema }[] | null;
  patterns?: { regex?: RegExp; schema?: Joi.Schema; rule: Joi.Schema }[] | null;
  items?: Joi.Schema[];
  matches?: { schema?: Joi.Schema }[];
}

/**
 * `Joi.any()` is written as every type at once, `array` among them without `items`: it is no type at all. A `.when`
 * that changes only presence is written `oneOf: [{}, {}]`, which no value passes (it matches both): dropped (fixObjects
 * states the rule). `.allow(null)` on alternatives is written `type: 'null'` beside their `anyOf`, which then only null
 * could pass and null fails: null becomes one more alternative.
 */
function dropAnyType(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(dropAnyType);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  if (Array.isArray(object.type) && object.type.length >= 6 && object.type.includes('array') && !object.items) delete object.type;
  if (object.type === 'null' && Array.isArray(object.anyOf)) {
    delete object.type;
    object.anyOf = [...(object.anyOf as JsonSchema[]), { type: 'null' }];
  }
  for (const value of Object.values(object)) dropAnyType(value);
  if (Array.isArray(object.oneOf) && object.oneOf.every((o) => o && typeof o === 'object' && !Object.keys(o).length)) delete object.oneOf;
  return object;
}

/** The JSON Schema a joi schema's `documented(...)` (core/validate.ts) states beside its rule, merged into the node. */
function mergeDocumented(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(mergeDocumented);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  for (const value of Object.values(object)) mergeDocumented(value);
  const extra = object[DOCUMENTED] as JsonSchema | undefined;
  if (extra) {
    delete object[DOCUMENTED];
    // a key given as null drops what joi-to-json wrote there (the documented schema says it another way)
    for (const [key, value] of Object.entries(structuredClone(extra))) {
      if (value === null) delete object[key];
      else object[key] = value;
    }
  }
  return object;
}

/** joi refuses a number past ±(2^53 - 1) (`number.unsafe`) unless a schema allows it, and none of ours does. */
const SAFE = Number.MAX_SAFE_INTEGER;

/**
 * What joi checks on every value that joi-to-json does not write: text without NUL (a string with no pattern, format
 * or enum of its own says so), numbers within the safe integers.
 */
function addImplicitRules(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(addImplicitRules);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  if (object.type === 'string' && !['pattern', 'format', 'enum', 'const', 'anyOf', 'oneOf'].some((k) => k in object)) object.pattern = NO_NUL;
  if (object.type === 'number' || object.type === 'integer') {
    if (!('minimum' in object || 'exclusiveMinimum' in object)) object.minimum = -SAFE;
    if (!('maximum' in object || 'exclusiveMaximum' in object)) object.maximum = SAFE;
  }
  for (const value of Object.values(object)) addImplicitRules(value);
  return object;
}

export const toJsonSchema = (schema: Joi.Schema): JsonSchema =>
  addImplicitRules(mergeDocumented(dropAnyType(fixObjects(fixExtensions(parse(schema, 'open-api-3.1')) as JsonSchema, schema)))) as JsonSchema;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 202: 'Accepted: queued', 400: 'A field is malformed (named in error)', 401: 'The API key is missing, unknown or revoked',
  403: 'Not allowed for this key', 404: 'Not found (or another account\'s)', 409: 'Conflict', 413: 'Over 1 MB', 415: 'Not UTF-8 JSON',
  422: 'Nobody to write to, or an Idempotency-Key reused', 429: 'A limit is reached (Retry-After)', 500: 'Internal error',
  503: 'Unavailable for now: the database is unreachable, or too many request bodies are being read at once (Retry-After); nothing was done',
};

export function queryParameters(query: Joi.Schema): JsonSchema[] {
  const schema = toJsonSchema(query) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name, in: 'query', required: schema.required?.includes(name) ?? false, schema: property,
  }));
}

/** `post /send/{id}` -> `postSendBy_id`. */
export const operationId = (method: string, path: string): string =>
  `${method}${path.replace(/\{(\w+)\}/g, 'By_$1').replace(/\/(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, '')}`;

let built: JsonSchema | undefined;

/** The OpenAPI 3.1 document of the public API (docs/operator.md), built once from the schemas above. */
export function openApiDocument(): JsonSchema {
  if (built) return built;
  const schemas: Record<string, JsonSchema> = {};
  const ref = (schema: Joi.Schema): JsonSchema => {
    const name = schema._flags.label as string | undefined;
    if (!name) return toJsonSchema(schema);
    schemas[name] ??= toJsonSchema(schema);
    return { $ref: `#/components/schemas/${name}` };
  };
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of OPERATIONS) {
    const all: Record<number, Joi.Schema> = { ...ALWAYS, ...(op.path.startsWith('/send') ? {} : LIVE_ONLY), ...op.answers };
    if (op.prospects) all[403] = R;
    if (op.idempotent) Object.assign(all, { 409: R, 422: R });
    const responses: Record<string, JsonSchema> = Object.fromEntries(
      Object.entries(all).map(([status, schema]) => [status, { description: STATUS_TEXT[Number(status)] ?? String(status), content: { 'application/json': { schema: ref(schema) } } }]),
    );
    if (op.media) responses[op.media.status] = { description: STATUS_TEXT[op.media.status] ?? String(op.media.status), content: { [op.media.type]: { schema: { type: 'string' } } } };
    const parameters: JsonSchema[] = [];
    if (op.path.includes('{id}')) parameters.push({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
    if (op.query) parameters.push(...queryParameters(op.query));
    const body = op.body ? toJsonSchema(op.body) : undefined;
    parameters.push(...(op.rules?.(body, parameters) ?? []));
    if (op.idempotent) {
      parameters.push({
        // 1 to 200 printable ASCII characters (core/idempotency); HTTP drops the spaces around a header's value
        name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 200, pattern: '^[!-~](?:[ -~]*[!-~])?$' },
        description: '1 to 200 printable ASCII characters; replays the first answer (Idempotent-Replayed: true) for 24 h; see docs/idempotency.md',
      });
    }
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      operationId: operationId(op.method, op.path),
      ...(parameters.length ? { parameters } : {}),
      ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
      ...(op.query && op.method !== 'get' ? { requestBody: { required: false, content: { 'application/json': { schema: toJsonSchema(op.query) } } } } : {}),
      responses,
    };
  }
  built = {
    openapi: '3.1.0',
    info: { title: 'mailservice public API', version: '1', description: 'Transactional sending, lists and outreach. Authenticate with `Authorization: Bearer <API key>`.' },
    servers: [{ url: '/api/v1' }],
    security: [{ bearer: [] }],
    paths,
    components: { schemas: { ...schemas, JsonValue: JSON_VALUE }, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  };
  return built;
}
