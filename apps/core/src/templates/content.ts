import { lazy } from '../lazy';
import { TokenKind, Tokenizer, type Template } from 'liquidjs';
import { parse, renderParsed, TemplateError, type Part } from './engine';

/** The parts of an email as written: subject, html and text sources (null: the part is not given). */
export interface EmailSource {
  subject: string;
  html: string | null;
  text: string | null;
}

/** What an email's sources become once: the layout put around the html, CSS inlined, each part parsed. */
export interface CompiledEmail {
  subject: Template[];
  html: Template[] | null;
  text: Template[] | null;
  /** make a text part from the rendered html when no text is given ('' otherwise: no text part at all) */
  textFromHtml: boolean;
}

export interface RenderedEmail {
  subject: string;
  html: string | null;
  text: string | null;
}

/** How a layout names where its template's html goes. */
export const CONTENT_VARIABLE = 'content';

/** The [begin, end) offsets of each `{{ content }}` output in a layout's html, wherever it sits (read by Liquid's tokenizer). */
export function contentSlots(layoutHtml: string): [number, number][] {
  parse(layoutHtml, 'html');
  return new Tokenizer(layoutHtml)
    .readTopLevelTokens()
    .filter((t) => t.kind === TokenKind.Output && (t as unknown as { content: string }).content.trim() === CONTENT_VARIABLE)
    .map((t) => [t.begin, t.end] as [number, number]);
}

/** The layout's html with the template's html in place of its `{{ content }}`: one source, parsed once. */
export function withLayout(layoutHtml: string, html: string): string {
  const slots = contentSlots(layoutHtml);
  if (!slots.length) throw new TemplateError('the layout has no {{ content }} where the template goes', null, 'syntax');
  let out = layoutHtml;
  for (const [begin, end] of slots.reverse()) out = out.slice(0, begin) + html + out.slice(end);
  return out;
}

/** Liquid's tags and outputs, kept out of juice's HTML parser (it would move or re-encode them) and put back after. */
const LIQUID_MARKUP = /\{%[\s\S]*?%\}|\{\{[\s\S]*?\}\}/g;

/** `<style>` rules written into each element's style attribute (juice), for mail clients that drop style sheets. */
export function inlineCss(html: string): string {
  if (!/<style[\s>]/i.test(html)) return html;
  const kept: string[] = [];
  const shielded = html.replace(LIQUID_MARKUP, (markup) => `LIQUIDMARKUP${kept.push(markup) - 1}X`);
  const inlined = juice()(shielded, { preserveMediaQueries: true, preserveFontFaces: true, applyWidthAttributes: false, applyHeightAttributes: false });
  return inlined.replace(/LIQUIDMARKUP(\d+)X(?:="")?/g, (_m, i: string) => kept[Number(i)]!);
}

const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } }));
// loaded on first use: a process that renders no template with <style> nor makes a text part carries neither
const juice = lazy((): typeof import('juice') => require('juice'));
const htmlToText = lazy(() => (require('html-to-text') as typeof import('html-to-text')).compile({
  wordwrap: false,
  selectors: [
    { selector: 'a', options: { linkBrackets: ['(', ')'], hideLinkHrefIfSameAsText: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'table', options: { uppercaseHeaderCells: false } },
    ...HEADINGS,
  ],
}));

/** The text part made from an html part (html-to-text): links keep their address, images are left out. */
export function textOf(html: string): string {
  return htmlToText()(html);
}

/**
 * Compiles an email's sources: the html inside the layout's `{{ content }}` when there is a layout, `<style>` inlined
 * when asked, each part parsed. Throws TemplateError (syntax) naming the part and line.
 */
export function compileEmail(source: EmailSource, options: { layoutHtml?: string | null; inlineCss?: boolean; textFromHtml?: boolean } = {}): CompiledEmail {
  let html = source.html;
  if (html !== null && options.layoutHtml) html = withLayout(options.layoutHtml, html);
  if (html !== null && options.inlineCss) html = inlineCss(html);
  return {
    subject: parsePart(source.subject, 'subject'),
    html: html === null ? null : parsePart(html, 'html'),
    text: source.text === null ? null : parsePart(source.text, 'text'),
    textFromHtml: options.textFromHtml ?? false,
  };
}

function parsePart(source: string, part: Part): Template[] {
  try {
    return parse(source, part);
  } catch (err) {
    if (err instanceof TemplateError) throw new TemplateError(`${part}: ${err.message}${err.line ? ` (line ${err.line})` : ''}`, err.line, err.kind);
    throw err;
  }
}

function renderPart(parsed: Template[], variables: Record<string, unknown>, part: Part): string {
  try {
    return renderParsed(parsed, variables, part);
  } catch (err) {
    if (err instanceof TemplateError) throw new TemplateError(`${part}: ${err.message}${err.line ? ` (line ${err.line})` : ''}`, err.line, err.kind);
    throw err;
  }
}

/** A subject is a header: one line, never html-escaped. */
export function oneLine(subject: string): string {
  return subject.replace(/[\r\n]+/g, ' ').trim();
}

/**
 * Renders a compiled email with `variables`: html escaped, text and subject raw, a text part made when asked.
 * `textAtDelivery`: leave a made text part to delivery (null), which makes it from the stored html the same way: a
 * send then costs the API the render alone.
 */
export function renderEmail(compiled: CompiledEmail, variables: Record<string, unknown>, options: { textAtDelivery?: boolean } = {}): RenderedEmail {
  const subject = oneLine(renderPart(compiled.subject, variables, 'subject'));
  const html = compiled.html ? renderPart(compiled.html, variables, 'html') : null;
  let text = compiled.text ? renderPart(compiled.text, variables, 'text') : null;
  // an html-only email: the text part made from it, or none at all ('' tells delivery not to make one)
  if (text === null && html !== null) text = !compiled.textFromHtml ? '' : options.textAtDelivery ? null : textOf(html);
  return { subject, html, text };
}
