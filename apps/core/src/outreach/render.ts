import { oneLine } from '../templates/content';
import { renderSource } from '../templates/engine';

/**
 * Step and broadcast bodies, through the one renderer (templates/engine.ts): `{{name}}`, `{{email}}`, `{{site}}`,
 * `{{unsubscribe_url}}` and `{{fields.X}}` are Liquid variables, and the rest of Liquid works too; anything missing
 * renders empty, never "undefined". The broadcast and list-series writers call renderTemplate and renderSubject.
 */
export interface TemplateContext {
  name: string;
  email: string | null;
  site?: string | null;
  unsubscribe_url?: string;
  /** a list email's preference centre (docs/preferences.md) */
  preferences_url?: string;
  fields: unknown;
}

/** The variables of a step or a copy: the reader's name, address, site, unsubscribe link and fields (an object only). */
export function contextVariables(ctx: TemplateContext): Record<string, unknown> {
  const fields = ctx.fields && typeof ctx.fields === 'object' && !Array.isArray(ctx.fields) ? ctx.fields : {};
  return { name: ctx.name, email: ctx.email ?? '', site: ctx.site ?? '', unsubscribe_url: ctx.unsubscribe_url ?? '', preferences_url: ctx.preferences_url ?? '', fields };
}

/** A body rendered for one reader: values HTML-escaped in an html part, written as they are in a text part. */
export function renderTemplate(template: string, ctx: TemplateContext, part: 'html' | 'text' = 'text'): string {
  return renderSource(template, contextVariables(ctx), part);
}

/** A subject line: rendered, on one line. */
export function renderSubject(template: string, ctx: TemplateContext): string {
  return oneLine(renderSource(template, contextVariables(ctx), 'subject'));
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
