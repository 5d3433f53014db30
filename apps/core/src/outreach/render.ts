/**
 * Step and broadcast templates: `{{name}}`, `{{email}}`, `{{site}}`, `{{unsubscribe_url}}` and `{{fields.X}}`; anything
 * missing renders empty, never "undefined".
 */

export interface TemplateContext {
  name: string;
  email: string | null;
  site?: string | null;
  unsubscribe_url?: string;
  fields: unknown;
}

const PLACEHOLDER = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+)?)\s*\}\}/g;

function lookup(path: string, ctx: TemplateContext): string {
  const [head, key] = path.split('.') as [string, string | undefined];
  let value: unknown;
  if (key !== undefined) {
    if (head !== 'fields' || !ctx.fields || typeof ctx.fields !== 'object' || Array.isArray(ctx.fields)) return '';
    value = Object.prototype.hasOwnProperty.call(ctx.fields, key) ? (ctx.fields as Record<string, unknown>)[key] : undefined;
  } else if (head === 'name' || head === 'email' || head === 'site' || head === 'unsubscribe_url') {
    value = ctx[head];
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** `escape` is applied to every value put in (escapeHtml for html bodies); the template's own text is left as written. */
export function renderTemplate(template: string, ctx: TemplateContext, escape: (value: string) => string = (v) => v): string {
  return template.replace(PLACEHOLDER, (_m, path: string) => escape(lookup(path, ctx)));
}

/** A subject line: rendered, on one line. */
export function renderSubject(template: string, ctx: TemplateContext): string {
  return renderTemplate(template, ctx).replace(/[\r\n]+/g, ' ').trim();
}

/**
 * Follow-ups reply in the thread of the first email. Their subject is "Re: <first subject>" unless the step has a
 * subject of its own (a template different from step 1's); threading headers are set either way.
 */
export function followUpSubject(stepTemplate: string, firstTemplate: string, ctx: TemplateContext): string {
  const own = stepTemplate.trim();
  if (own && own !== firstTemplate.trim()) return renderSubject(own, ctx);
  const first = renderSubject(firstTemplate, ctx);
  return /^re:/i.test(first) ? first : `Re: ${first}`;
}
