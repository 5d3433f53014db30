import { CaptureTag, Context, Drop, Liquid, LiquidError, toValueSync, type Template } from 'liquidjs';
import { escapeHtml } from '../subscribers/html';

/**
 * The one renderer of every email the service writes (docs/templates.md): Liquid through LiquidJS. No code runs (Liquid
 * has no way to call JavaScript), nothing is read from disk (`include`, `render` and `layout` are removed), and a
 * render's time (so every loop), allocations (ranges, filters) and output are capped.
 */

/** One part of an email: html output is HTML-escaped unless `| raw`; text and the subject are written as given. */
export type Part = 'html' | 'text' | 'subject';

export const TEMPLATE_LIMITS = {
  /** characters of one source (subject, html or text; a layout with its template counts as one) */
  sourceChars: 1024 * 1024,
  /** milliseconds of one render */
  renderMs: 250,
  /** characters allocated by filters and ranges in one render */
  memory: 8 * 1024 * 1024,
  /** characters one part may render to (an email is at most 1 MB) */
  outputChars: 2 * 1024 * 1024,
} as const;

/** A template that does not parse, or a render that failed or passed a limit; `line` is 1-based when known. */
export class TemplateError extends Error {
  constructor(
    message: string,
    readonly line: number | null,
    readonly kind: 'syntax' | 'render' | 'limit',
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

/**
 * HTML already made in an html part: what `escape` and `escape_once` answer and what `{% capture %}` captured (its
 * values escaped as they were written). Written as it is, never escaped a second time; a filter after it reads its
 * text (and its answer is escaped as any value is).
 */
class SafeHtml extends Drop {
  constructor(readonly html: string) {
    super();
  }
  override valueOf(): string {
    return this.html;
  }
  override toString(): string {
    return this.html;
  }
}

const UNESCAPED: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#34;': '"', '&#39;': "'" };

/** The html engine's capture: what it captured is HTML already (SafeHtml). */
class HtmlCapture extends CaptureTag {
  override *render(ctx: Context): Generator<unknown, void, unknown> {
    const html = (yield this.liquid.renderer.renderTemplates(this.templates, ctx)) as string;
    ctx.bottom()[this.variable] = new SafeHtml(html);
  }
}

/** What a value put into an email becomes: strings, numbers and booleans as text; anything else (objects, null) empty. */
function scalar(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value instanceof SafeHtml) return value.html;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return value.filter((v) => typeof v !== 'object' || v === null).map(scalar).filter(Boolean).join(', ');
  return '';
}

const NO_FILES = ['include', 'render', 'layout'];

function makeEngine(part: Part): Liquid {
  const engine = new Liquid({
    templates: {},
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    cache: false,
    parseLimit: TEMPLATE_LIMITS.sourceChars,
    renderLimit: TEMPLATE_LIMITS.renderMs,
    memoryLimit: TEMPLATE_LIMITS.memory,
    outputEscape: part === 'html' ? (value: unknown) => (value instanceof SafeHtml ? value.html : escapeHtml(scalar(value))) : scalar,
  });
  for (const tag of NO_FILES) delete (engine.tags as Record<string, unknown>)[tag];
  if (part === 'html') {
    // escaped once: `| escape` and a captured block are HTML already, not values to escape again (docs/templates.md)
    engine.registerFilter('escape', (value: unknown) => new SafeHtml(escapeHtml(scalar(value))));
    engine.registerFilter('xml_escape', (value: unknown) => new SafeHtml(escapeHtml(scalar(value))));
    engine.registerFilter('escape_once', (value: unknown) => new SafeHtml(escapeHtml(scalar(value).replace(/&(?:amp|lt|gt|quot|#34|#39);/g, (e) => UNESCAPED[e]!))));
    engine.registerTag('capture', HtmlCapture);
  }
  return engine;
}

/** The engines are fixed at import: options only, no cache, nothing kept between renders. */
const engines: Record<Part, Liquid> = { html: makeEngine('html'), text: makeEngine('text'), subject: makeEngine('text') };

/** Parsed sources, by part and text: parsing is a pure function of the two, and this bounds its memo. */
const PARSED_MAX = 500;
const parsedMemo = new Map<string, Template[]>();

function lineOf(err: unknown): number | null {
  const token = (err as { token?: { getPosition?: () => [number, number] } }).token;
  const position = token?.getPosition?.();
  return position ? position[0] : null;
}

/** The words of a LiquidJS error without its line and column suffix (given apart as `line`). */
function wordsOf(err: Error): string {
  const first = err.message.split('\n')[0]!;
  return first.replace(/, line:\d+, col:\d+$/, '');
}

/** A source parsed for a part: throws TemplateError (kind syntax) naming the line. */
export function parse(source: string, part: Part): Template[] {
  const key = `${part}\u0000${source}`;
  const hit = parsedMemo.get(key);
  if (hit) return hit;
  let parsed: Template[];
  try {
    parsed = engines[part].parse(source);
  } catch (err) {
    if (!LiquidError.is(err) && !(err instanceof Error)) throw err;
    throw new TemplateError(wordsOf(err as Error), lineOf(err), 'syntax');
  }
  if (parsedMemo.size >= PARSED_MAX) parsedMemo.delete(parsedMemo.keys().next().value!);
  parsedMemo.set(key, parsed);
  return parsed;
}

/** Counts what a render writes and stops it past TEMPLATE_LIMITS.outputChars. */
class CappedEmitter {
  buffer = '';
  write(html: unknown): void {
    const text = typeof html === 'string' ? html : scalar(html);
    if (this.buffer.length + text.length > TEMPLATE_LIMITS.outputChars) {
      throw new TemplateError(`the template renders more than ${TEMPLATE_LIMITS.outputChars} characters`, null, 'limit');
    }
    this.buffer += text;
  }
}

/** Renders a parsed source with `variables`; throws TemplateError for a failed render or a passed limit. */
export function renderParsed(parsed: Template[], variables: Record<string, unknown>, part: Part): string {
  const engine = engines[part];
  const ctx = new Context(variables, engine.options, { sync: true }, { liquid: engine } as never);
  const emitter = new CappedEmitter();
  try {
    toValueSync(engine.renderer.renderTemplates(parsed, ctx, emitter as never));
  } catch (err) {
    if (err instanceof TemplateError) throw err;
    const original = (err as { originalError?: unknown }).originalError;
    if (original instanceof TemplateError) throw original;
    const words = wordsOf(err as Error);
    const limit = /limit exceeded/.test(words);
    throw new TemplateError(limit ? `the template passed a limit (${words}): a loop too long, or too much output` : words, lineOf(err), limit ? 'limit' : 'render');
  }
  return emitter.buffer;
}

/** Parses and renders one source for one part. */
export function renderSource(source: string, variables: Record<string, unknown>, part: Part): string {
  return renderParsed(parse(source, part), variables, part);
}

/** The names a source reads at its top level (`{{ name }}`, `{% if fields.x %}` gives `fields`), for required checks. */
export function variablesOf(source: string, part: Part): string[] {
  try {
    return engines[part].globalVariablesSync(source);
  } catch {
    return [];
  }
}
