import { oneLine } from './content';
import { renderSource } from './engine';

/**
 * The bodies written to one reader (outreach steps, broadcast copies, series steps, the archive's pages), through the
 * one renderer (engine.ts): `{{name}}`, `{{email}}`, `{{site}}`, `{{unsubscribe_url}}` and `{{fields.X}}` are Liquid
 * variables, and the rest of Liquid works too; anything missing renders empty, never "undefined". Outreach's steps
 * call renderTemplate and renderSubject; a list's copies (broadcasts, series) call list-copy.ts's renderCopy.
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
