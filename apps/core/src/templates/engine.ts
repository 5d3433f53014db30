import { CaptureTag, Context, Drop, Liquid, LiquidError, toValueSync, type FilterImplOptions, type Template } from 'liquidjs';
import { escapeHtml } from './escape';

/**
 * The one renderer of every email the service writes (docs/templates.md): Liquid through LiquidJS. No code runs (Liquid
 * has no way to call JavaScript), nothing is read from disk (`include`, `render` and `layout` are removed), and a
 * render's time (so every loop), allocations (ranges, filters) and output are capped, each where one step could pass
 * it: the clock is read at every filter call, not only between tags, and no one filter is given or makes a list longer
 * than `listItems` (a sort of 3 million numbers took 2.7 s and 600 MB in one call), a range wider than `oneValue`, a
 * string longer than `outputChars`, or a `_exp` expression longer than `expressionChars`; a capture is capped like an
 * output. A literal range past its cap is refused when the template is parsed (so when it is stored).
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
  /** characters one part may render to (an email is at most 1 MB); also a capture's and a filter's string */
  outputChars: 2 * 1024 * 1024,
  /** items of a list one filter is given or makes (sort, map, where, split, concat...) */
  listItems: 10_000,
  /** items of one range, or characters of one allocation */
  oneValue: 1_000_000,
  /** characters of the expression of a `_exp` filter (where_exp, group_by_exp...): evaluated once per item */
  expressionChars: 500,
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
    // capped like an output (CappedEmitter): a loop inside cannot build a string past the cap
    const emitter = new CappedEmitter();
    yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter as never);
    ctx.bottom()[this.variable] = new SafeHtml(emitter.buffer);
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

function overLimit(what: string): TemplateError {
  return new TemplateError(`the template passed a limit: ${what}`, null, 'limit');
}

/** The render's allocations, counted as LiquidJS counts them (TEMPLATE_LIMITS.memory), and no one of them past oneValue. */
class CappedMemory {
  private used = 0;
  use(count: number): void {
    if (!(+count > 0)) return;
    if (+count > TEMPLATE_LIMITS.oneValue) throw overLimit(`a range or value of more than ${TEMPLATE_LIMITS.oneValue} items`);
    this.used += +count;
    if (this.used > TEMPLATE_LIMITS.memory) throw overLimit(`more than ${TEMPLATE_LIMITS.memory} characters allocated by ranges and filters`);
  }
  check(): void {}
}

/** What a filter is given or answers, past the caps one call could pass. */
function checkValue(value: unknown, filter: string): void {
  if (Array.isArray(value) && value.length > TEMPLATE_LIMITS.listItems) throw overLimit(`a list of more than ${TEMPLATE_LIMITS.listItems} items (${filter})`);
  if (typeof value === 'string' && value.length > TEMPLATE_LIMITS.outputChars) throw overLimit(`a string of more than ${TEMPLATE_LIMITS.outputChars} characters (${filter})`);
}

type FilterThis = { context: Context };
type FilterFn = (this: FilterThis, ...args: unknown[]) => unknown;

/** A filter that reads the render's clock, and checks what it is given and what it answers. */
function cappedFilter(name: string, impl: FilterImplOptions): FilterImplOptions {
  const handler = (typeof impl === 'function' ? impl : impl.handler) as FilterFn | undefined;
  if (!handler) return impl;
  const expression = name.endsWith('_exp');
  const capped = function* (this: FilterThis, ...args: unknown[]): Generator<unknown, unknown, unknown> {
    this.context.renderLimit.check(performance.now());
    for (const arg of args) checkValue(arg, name);
    if (expression && typeof args[2] === 'string' && args[2].length > TEMPLATE_LIMITS.expressionChars) {
      throw overLimit(`an expression of more than ${TEMPLATE_LIMITS.expressionChars} characters (${name})`);
    }
    // a generator filter's iterator is run by LiquidJS when yielded; a plain value comes back as it is
    const result = yield handler.apply(this, args);
    checkValue(result, name);
    return result;
  };
  return typeof impl === 'function' ? capped : { ...impl, handler: capped };
}

/** `{% capture %}` into a capped emitter: a loop inside cannot build a string past the output cap. */
class CappedCapture extends CaptureTag {
  override *render(ctx: Context): Generator<unknown, void, unknown> {
    const emitter = new CappedEmitter();
    yield this.liquid.renderer.renderTemplates(this.templates, ctx, emitter as never);
    ctx.bottom()[this.variable] = emitter.buffer;
  }
}

/** Literal ranges in a source, `(1..3000000)`: one past its cap is known before any render. */
const LITERAL_RANGE = /\(\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*\)/g;

const LIQUID_MARKUP = /\{%[\s\S]*?%\}|\{\{[\s\S]*?\}\}/g;

function checkLiteralRanges(source: string): void {
  const markup = source.match(LIQUID_MARKUP)?.join(' ') ?? '';
  for (const [, low, high] of markup.matchAll(LITERAL_RANGE)) {
    if (Number(high) - Number(low) + 1 > TEMPLATE_LIMITS.oneValue) throw overLimit(`a range of more than ${TEMPLATE_LIMITS.oneValue} items`);
  }
}

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
  } else engine.registerTag('capture', CappedCapture);
  for (const [name, impl] of Object.entries(engine.filters)) engine.registerFilter(name, cappedFilter(name, impl));
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
  checkLiteralRanges(source);
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
  const ctx = new Context(variables, engine.options, { sync: true }, { liquid: engine, memoryLimit: new CappedMemory() } as never);
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

/** The variables a source reads, as paths (`name`, `fields.city`): the fields of the console's preview forms. */
export function variablePathsOf(source: string, part: Part): string[] {
  try {
    return engines[part].globalFullVariablesSync(source);
  } catch {
    return [];
  }
}
