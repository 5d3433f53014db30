import type { Request } from 'express';

/**
 * The console's structured editors without a script: a repeating section of a form is rows of fields named
 * `<prefix><n>.<name>` (n from 0), each with a position (to reorder) and a Remove box; the form carries its rows and a
 * blank one to add. Saving reads them back here in the order of their positions (ties: as shown), leaving out removed
 * rows and rows left blank (a row moved to a taken place goes before the row there), and the page's own code makes them the admin API's body for the same domain function.
 */
const ROW_NAME = /^([a-z]+)(\d{1,3})\.([a-z_]+)$/;

/** The rows of the section `prefix` (of a request's form, or of a query), in the order the form's positions say; `position` and `remove` are not values. */
export function formRows(source: Request | Record<string, unknown>, prefix: string): Record<string, string>[] {
  const body = ((isRequest(source) ? source.body : source) ?? {}) as Record<string, unknown>;
  const rows = new Map<number, Record<string, string>>();
  for (const [name, raw] of Object.entries(body)) {
    const match = ROW_NAME.exec(name);
    if (!match || match[1] !== prefix || typeof raw !== 'string') continue;
    const index = Number(match[2]);
    const row = rows.get(index) ?? {};
    row[match[3]!] = raw.trim();
    rows.set(index, row);
  }
  const kept = [...rows.entries()].filter(([, row]) => row.remove !== 'yes' && Object.entries(row).some(([k, v]) => k !== 'position' && v !== ''));
  const position = (index: number, row: Record<string, string>) => (row.position !== undefined && row.position !== '' && Number.isFinite(Number(row.position)) ? Number(row.position) : index + 1);
  // a row moved to a taken place goes before the row already there
  const moved = (index: number, row: Record<string, string>) => (position(index, row) === index + 1 ? 1 : 0);
  kept.sort(([a, rowA], [b, rowB]) => position(a, rowA) - position(b, rowB) || moved(a, rowA) - moved(b, rowB) || a - b);
  return kept.map(([, row]) => {
    const { position: _position, remove: _remove, ...values } = row;
    return values;
  });
}

const isRequest = (source: Request | Record<string, unknown>): source is Request => typeof (source as Request).get === 'function' && 'body' in source;

/** A typed number as joi should judge it: blank is not given, a number is a number, anything else stays text (joi names it). */
export const typedNumber = (value: string | undefined): number | string | undefined => (value === undefined || value === '' ? undefined : Number.isFinite(Number(value)) ? Number(value) : value);

/** A template picker's value as the admin API's `template`: an id, or not given. */
export const templateChoice = (value: string | undefined): number | string | undefined => (value ? typedNumber(value) : undefined);

/** A step's row as the admin API's step: the texts given (of `texts`), the template picked, the wait in hours. */
export const stepOf = (row: Record<string, string>, texts: string[]) => ({
  ...Object.fromEntries(texts.filter((name) => row[name]).map((name) => [name, row[name]])),
  ...(row.template ? { template: templateChoice(row.template) } : {}),
  delay_hours: typedNumber(row.delay_hours),
});

/** Comma or line separated words, blanks dropped. */
export const words = (value: string | undefined): string[] =>
  (value ?? '')
    .split(/[,\n]/)
    .map((w) => w.trim())
    .filter(Boolean);

/**
 * The eta markup of a row's position and Remove fields (`i` is the row's index, `n` its place shown, `s.blank` a row
 * to add, which has nothing to remove). Labels name the row so every field has its own accessible name.
 */
export const rowControls = (prefix: string, what: string) =>
  `<label>Position <input type="number" name="${prefix}<%= i %>.position" value="<%= n %>" min="1" max="99" class="position" aria-label="${what} <%= n %>: position"></label>
<% if (!s.blank) { %><label class="remove"><input type="checkbox" name="${prefix}<%= i %>.remove" value="yes"> Remove ${what.toLowerCase()} <%= n %></label><% } %>`;

/** A step's template picker: `it.templates` (the account's), the row's `s.template` chosen. */
export const STEP_TEMPLATE = `<label>Template <select name="step<%= i %>.template"><option value="">none: the subject and body below</option><% it.templates.forEach(function (t) { %><option value="<%= t.id %>"<% if (t.id === s.template) { %> selected<% } %>><%= t.name %><%= t.alias ? ' (' + t.alias + ')' : '' %></option><% }) %></select></label>`;
