import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { openApiDocument } from '../../apps/api/src/openapi/document';
import type { RecordedAnswer } from './openapi';

interface Doc {
  paths: Record<string, Record<string, { responses: Record<string, { content: { 'application/json': { schema: object } } }> }>>;
  components: { schemas: Record<string, object> };
}

const doc = openApiDocument() as unknown as Doc;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const compiled = new Map<object, ValidateFunction>();
const validator = (schema: object) => {
  let fn = compiled.get(schema);
  if (!fn) compiled.set(schema, (fn = ajv.compile({ ...schema, components: doc.components })));
  return fn;
};
const refusal = validator({ $ref: '#/components/schemas/Refusal' });

/** `/send/{id}` as a pattern matching `/api/v1/send/<anything but a slash>`. */
const templates = Object.keys(doc.paths).map((template) => ({
  template,
  pattern: new RegExp(`^/api/v1${template.replace(/\{\w+\}/g, '[^/]+')}$`),
}));

export function operationOf(method: string, path: string): { template?: string; operation?: Doc['paths'][string][string] } {
  const found = templates.find((t) => t.pattern.test(path));
  return { template: found?.template, operation: found ? doc.paths[found.template]![method.toLowerCase()] : undefined };
}

/** What is wrong with each answer: a status the document does not list for the operation, or a body off its schema. */
export function answerProblems(answers: RecordedAnswer[]): string[] {
  const problems: string[] = [];
  for (const answer of answers) {
    const where = `${answer.method} ${answer.path} -> ${answer.status}`;
    if (answer.method === 'HEAD') {
      // GET's answer without its body (RFC 9110 9.3.2; Express answers HEAD with the GET route): GET's statuses
      const { template, operation } = operationOf('GET', answer.path);
      if (!operation?.responses[String(answer.status)]) problems.push(`${where}: status ${answer.status} is not documented for GET ${template ?? '(no path)'}`);
      continue;
    }
    if (!answer.contentType.startsWith('application/json')) {
      // a success the document gives another media type (GET /send/{id}/raw: message/rfc822)
      const media = operationOf(answer.method, answer.path).operation?.responses[String(answer.status)]?.content as Record<string, unknown> | undefined;
      if (media && Object.keys(media).some((type) => answer.contentType.startsWith(type))) continue;
      problems.push(`${where}: not JSON (${answer.contentType})`);
      continue;
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.body);
    } catch {
      problems.push(`${where}: the body is not JSON`);
      continue;
    }
    const { template, operation } = operationOf(answer.method, answer.path);
    if (!operation) {
      // no such operation: only the generic refusals (unknown route 404, method not allowed 405, no key 401) may answer
      const expected = template ? [401, 405] : [401, 404];
      if (!expected.includes(answer.status) || !refusal(body)) problems.push(`${where}: not a documented operation (${template ?? 'no path'})`);
      continue;
    }
    const response = operation.responses[String(answer.status)];
    if (!response) {
      problems.push(`${where}: status ${answer.status} is not documented for ${answer.method} ${template}`);
      continue;
    }
    const check = validator(response.content['application/json'].schema);
    if (!check(body)) problems.push(`${where}: ${ajv.errorsText(check.errors)} in ${answer.body.slice(0, 300)}`);
  }
  return problems;
}
