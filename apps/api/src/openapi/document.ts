import parse from 'joi-to-json';
import type Joi from 'joi';
import { addProspectsInput, outcomeInput, prospectQuery } from '../../../core/src/outreach/schemas';
import { MAX_WAIT_SECONDS } from '../../../core/src/sending/accept';
import { sendSchema } from '../../../core/src/sending/schema';
import { subscriberInput, unsubscribeInput } from '../../../core/src/subscribers/schema';
import * as answers from './answers';

type JsonSchema = Record<string, unknown>;

/** One operation of the public API: the joi schemas that validate its request and describe each of its answers. */
interface Operation {
  method: 'get' | 'post' | 'delete';
  path: string;
  summary: string;
  body?: Joi.Schema;
  query?: Joi.Schema;
  /** the prospects permission of the key (403 without it) */
  prospects?: boolean;
  /** takes an Idempotency-Key (docs/idempotency.md): 409 while the first request is in flight, 422 for another body */
  idempotent?: boolean;
  answers: Record<number, Joi.Schema>;
  /** rules the server enforces in code, not in the joi schema, written into the request's schema here */
  rules?: (body: JsonSchema | undefined, parameters: JsonSchema[]) => JsonSchema[] | void;
}

const property = (schema: JsonSchema | undefined, name: string) => ((schema?.properties ?? {}) as Record<string, JsonSchema>)[name]!;

const R = answers.refusal;
/**
 * Every operation may answer these: a malformed address (a bad %-escape, a NUL), no or a bad key, too many failed
 * keys from one client (docs/hardening.md), and a fault (with a request id in the message).
 */
const ALWAYS = { 400: R, 401: R, 429: R, 500: R, 503: R };
/** And every operation that takes a JSON body: malformed JSON, over 1 MB, not UTF-8. */
const WITH_BODY = { 400: R, 413: R, 415: R };

export const OPERATIONS: Operation[] = [
  {
    method: 'post', path: '/send', summary: 'Send an email', body: sendSchema, idempotent: true,
    answers: { 200: answers.sendAnswer, 202: answers.sendAnswer, ...WITH_BODY, 403: R, 409: R, 422: R, 429: R },
    rules: (body) => {
      // sending/schema.ts: text or html (400 without either); an empty `from` is refused (400); a `to` that leaves
      // nobody to write to (empty, or every address suppressed or stop-listed) is 422
      body!.anyOf = [{ required: ['text'] }, { required: ['html'] }];
      property(body, 'from').minLength = 1;
      property(body, 'to').description = 'one address or up to 500; none left after suppressions and the stop list (or an empty list) answers 422';
      return [
        {
          name: 'Prefer', in: 'header', required: false, schema: { type: 'string' },
          description: `wait=N (RFC 7240, N up to ${MAX_WAIT_SECONDS}): answer once every copy is delivered or failed, or after N seconds (200 with the statuses then); see docs/sending.md`,
        },
      ];
    },
  },
  { method: 'get', path: '/send/{id}', summary: 'A send and its messages', answers: { 200: answers.sendAnswer, 404: R } },
  { method: 'get', path: '/lists', summary: "The key's account's lists", answers: { 200: answers.listsAnswer } },
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
];

/** joi-to-json names joi extensions by their type: the tags type of subscribers is an array of strings or one string. */
function fixExtensions(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(fixExtensions);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  if (object.type === 'tags') {
    const { type: _tags, ...rest } = object;
    return { ...rest, anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string', description: 'tags separated by spaces' }] };
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
 *   no body can satisfy alongside the other keys: a branch only adds conditions, so it is left open.
 */
function fixObjects(node: JsonSchema, schema: Joi.Schema | undefined): JsonSchema {
  const terms = (schema as unknown as { $_terms?: JoiTerms } | undefined)?.$_terms;
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
  }
  if (schema?.type === 'array' && node.items && terms?.items?.length === 1) fixObjects(node.items as JsonSchema, terms.items[0]);
  for (const branch of (node.allOf ?? []) as JsonSchema[]) {
    for (const part of ['then', 'else'] as const) if (branch[part]) delete (branch[part] as JsonSchema).additionalProperties;
  }
  return node;
}

interface JoiTerms {
  keys?: { key: string; schema: Joi.Schema }[] | null;
  patterns?: { regex?: RegExp; schema?: Joi.Schema; rule: Joi.Schema }[] | null;
  items?: Joi.Schema[];
}

/** `Joi.any()` is written as every type at once, `array` among them without `items`: it is no type at all. */
function dropAnyType(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(dropAnyType);
  if (!node || typeof node !== 'object') return node;
  const object = node as JsonSchema;
  if (Array.isArray(object.type) && object.type.length >= 6 && object.type.includes('array') && !object.items) delete object.type;
  for (const value of Object.values(object)) dropAnyType(value);
  return object;
}

export const toJsonSchema = (schema: Joi.Schema): JsonSchema => dropAnyType(fixObjects(fixExtensions(parse(schema, 'open-api-3.1')) as JsonSchema, schema)) as JsonSchema;

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 202: 'Accepted: queued', 400: 'A field is malformed (named in error)', 401: 'The API key is missing, unknown or revoked',
  403: 'Not allowed for this key', 404: 'Not found (or another account\'s)', 409: 'Conflict', 413: 'Over 1 MB', 415: 'Not UTF-8 JSON',
  422: 'Nobody to write to, or an Idempotency-Key reused', 429: 'A limit is reached (Retry-After)', 500: 'Internal error',
  503: 'Unavailable for now: the database is unreachable, or too many request bodies are being read at once (Retry-After); nothing was done',
};

function queryParameters(query: Joi.Schema): JsonSchema[] {
  const schema = toJsonSchema(query) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => ({
    name, in: 'query', required: schema.required?.includes(name) ?? false, schema: property,
  }));
}

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
    const all: Record<number, Joi.Schema> = { ...ALWAYS, ...op.answers };
    if (op.prospects) all[403] = R;
    if (op.idempotent) Object.assign(all, { 409: R, 422: R });
    const responses = Object.fromEntries(
      Object.entries(all).map(([status, schema]) => [status, { description: STATUS_TEXT[Number(status)] ?? String(status), content: { 'application/json': { schema: ref(schema) } } }]),
    );
    const parameters: JsonSchema[] = [];
    if (op.path.includes('{id}')) parameters.push({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
    if (op.query) parameters.push(...queryParameters(op.query));
    const body = op.body ? toJsonSchema(op.body) : undefined;
    parameters.push(...(op.rules?.(body, parameters) ?? []));
    if (op.idempotent) {
      parameters.push({
        name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', minLength: 1, maxLength: 200 },
        description: 'replays the first answer (Idempotent-Replayed: true) for 24 h; see docs/idempotency.md',
      });
    }
    (paths[op.path] ??= {})[op.method] = {
      summary: op.summary,
      operationId: `${op.method}${op.path.replace(/\{(\w+)\}/g, 'By_$1').replace(/\/(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, '')}`,
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
    components: { schemas, securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
  };
  return built;
}
