import { TEXT_OR_HTML } from '../../../core/src/sending/schema';
import { openApiDocument, type JsonSchema } from './document';

/** A template of the key's account, as the keyed document names it: its id, its alias, the variables it requires. */
export interface KeyTemplate {
  id: number;
  alias: string | null;
  required: string[];
}

/** A regex alternative matching the decimal numbers of `width` digits from 0 up to `max` (inclusive). */
function upTo(max: number, width: number): string {
  const digits = String(max).padStart(width, '0');
  // e.g. 2025 of 4: [0-1][0-9]{3} | 20[0-1][0-9]{1} | 202[0-4] | 2025
  const parts: string[] = [];
  for (let i = 0; i < width; i++) {
    const d = Number(digits[i]);
    if (d > 0) parts.push(`${digits.slice(0, i)}${d === 1 ? '0' : `[0-${d - 1}]`}${i + 1 < width ? `[0-9]{${width - i - 1}}` : ''}`);
  }
  parts.push(digits);
  return parts.join('|');
}

const TIME = 'T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])';
const ANY_DAY = '(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])';

/**
 * RFC 3339 date-times on a day up to `last` (UTC): every earlier year, then the earlier months of its year, then its
 * month's days up to its own.
 */
export function dateTimesUpTo(last: Date): string {
  const [y, m, d] = [last.getUTCFullYear(), last.getUTCMonth() + 1, last.getUTCDate()];
  const pad = (n: number) => String(n).padStart(2, '0');
  const from1 = (n: number) => Array.from({ length: n }, (_, i) => pad(i + 1)).join('|');
  const days = [`(?:${upTo(y - 1, 4)})-${ANY_DAY}`];
  if (m > 1) days.push(`${y}-(?:${from1(m - 1)})-(?:0[1-9]|[12][0-9]|3[01])`);
  days.push(`${y}-${pad(m)}-(?:${from1(d)})`);
  return `^(?:${days.join('|')})${TIME}$`;
}

/** The keyed document's shortest Idempotency-Key: 16 characters, as random ones do not collide. */
const IDEMPOTENCY_KEY_ADVISED = 16;

/** A day less than 30: the latest local date a client in any time zone may write and still be within 30 days. */
const SEND_AHEAD_DAYS_SAFE = 28;

/**
 * The document as a key sees it (GET /api/v1/openapi.json with the key): the same operations, and on POST /send what
 * only the key and the hour can say. `from` is the key's mailbox address (any other answers 403), `send_at` (and PATCH
 * /send/{id}'s) a date up to 28 days after today (at most 30 days ahead, less the widest time zones), `template` one of
 * the account's, with the variables it requires; and an Idempotency-Key of 16 characters or more (the service takes 1
 * to 200, but short keys repeat): a document a tool can generate requests from that the service accepts.
 */
export function openApiDocumentFor(mailboxAddress: string, now = new Date(), templates: KeyTemplate[] = []): JsonSchema {
  const doc = structuredClone(openApiDocument()) as {
    paths: Record<string, Record<string, { parameters?: JsonSchema[]; requestBody: { content: Record<string, { schema: { properties: Record<string, JsonSchema> } }> } }>>;
  };
  for (const operations of Object.values(doc.paths)) {
    for (const operation of Object.values(operations)) {
      const idempotencyKey = operation.parameters?.find((p) => p.name === 'Idempotency-Key');
      // the service takes 1 to 200 characters; keys this long do not repeat by chance when a tool generates them
      // (a key reused with another body is 422)
      if (idempotencyKey) Object.assign(idempotencyKey.schema as JsonSchema, { minLength: IDEMPOTENCY_KEY_ADVISED });
    }
  }
  const send = doc.paths['/send']!.post!.requestBody.content['application/json']!.schema.properties;
  const address = mailboxAddress.toLowerCase().replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  send.from = {
    type: 'string',
    description: `this key's mailbox address (403 for another), optionally with a display name: \`${mailboxAddress}\` or \`Name <${mailboxAddress}>\``,
    anyOf: [{ type: 'string', pattern: `^${address}$` }, { type: 'string', pattern: `^[^"<>\\r\\n\\u0000]*<${address}>$` }],
  };
  const soonest = dateTimesUpTo(new Date(now.getTime() + SEND_AHEAD_DAYS_SAFE * 86_400_000));
  send.send_at = { ...send.send_at, pattern: soonest };
  delete send.send_at.format;
  const reschedule = doc.paths['/send/{id}']!.patch!.requestBody.content['application/json']!.schema.properties;
  reschedule.send_at = { description: reschedule.send_at!.description, anyOf: [{ type: 'string', pattern: soonest }, { type: 'null' }] };
  const body = doc.paths['/send']!.post!.requestBody.content['application/json']!.schema as unknown as JsonSchema;
  if (templates.length) {
    // the templates of the key's account, by id and alias; one that requires variables takes them (422 otherwise)
    send.template = { ...send.template, anyOf: undefined, enum: templates.flatMap((t) => (t.alias ? [t.id, t.alias] : [t.id])) };
    delete send.template.anyOf;
    const rules = templates
      .filter((t) => t.required.length)
      .map((t) => ({
        if: { required: ['template'], properties: { template: { enum: t.alias ? [t.id, t.alias] : [t.id] } } },
        then: { required: ['variables'], properties: { variables: { type: 'object', required: t.required } } },
      }));
    if (rules.length) body.allOf = [...((body.allOf as JsonSchema[] | undefined) ?? []), ...rules];
  } else {
    // an account without templates sends written emails only: subject, and text or html
    delete send.template;
    delete send.variables;
    body.required = [...new Set([...((body.required as string[] | undefined) ?? []), 'subject'])];
    body.allOf = [{ anyOf: TEXT_OR_HTML }];
  }
  return doc as unknown as JsonSchema;
}
