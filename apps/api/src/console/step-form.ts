import type { Request } from 'express';
import { CONDITIONS } from '../../../core/src/outreach/branches';
import type { StepInput } from '../../../core/src/outreach/campaigns';
import { WINNER_METRICS } from '../../../core/src/experiments/variants';
import { BadRequest } from '../../../core/src/errors';
import { formRows, rowControls, STEP_TEMPLATE, templateChoice, typedNumber } from './editors';
import { CSRF_FIELD } from './views';

/**
 * A campaign's steps editor (docs/outreach.md, branches and A/B tests) as a form without a script: one row per step,
 * each of a kind (an email, an email whose subject and body are A/B variants, a condition that branches), with every
 * field the admin API takes for a step. `stepsOfForm` makes the rows the admin API's `steps`, which the route checks with
 * the same schema (outreach/schema.ts `campaignChanges`) and the same domain function as PATCH /admin/api/campaigns/{id}.
 * A step's fields of the other kinds are left out. Variant fields are `<letter>_subject`, `_body`, `_weight` (A to J).
 */
export const VARIANT_LETTERS = 'abcdefghij'.split('');
const KINDS = ['email', 'ab', 'condition'] as const;
type Kind = (typeof KINDS)[number];

/** A stored step as the editor's row (`kind` picks the fields that apply), and one more blank variant to add. */
export interface StepRow {
  blank: boolean;
  kind: Kind;
  id: string;
  delay_hours: number | string;
  next: string;
  template: number | string | null;
  subject: string;
  body: string;
  variants: { letter: string; subject: string; body: string; weight: number | string }[];
  metric: string;
  after_hours: number | string;
  min_sample: number | string;
  if: string;
  within_hours: number | string;
  then: string;
  else: string;
}

const BLANK: Omit<StepRow, 'variants'> = { blank: true, kind: 'email', id: '', delay_hours: '', next: '', template: null, subject: '', body: '', metric: '', after_hours: '', min_sample: '', if: '', within_hours: '', then: '', else: '' };

/** The variant slots of a row: its own and one more to add, at least three (a test needs two), ten at most. */
function variantSlots(own: { subject: string; body: string; weight: number }[]) {
  const count = Math.min(VARIANT_LETTERS.length, Math.max(3, own.length + 1));
  return VARIANT_LETTERS.slice(0, count).map((letter, n) => ({ letter, subject: own[n]?.subject ?? '', body: own[n]?.body ?? '', weight: own[n]?.weight ?? '' }));
}

/** The editor's rows for these steps, then `blanks` blank ones to add. */
export function stepRows(steps: StepInput[], blanks: number): StepRow[] {
  const rows = steps.map((s): StepRow => {
    if (s.type === 'condition') return { ...BLANK, blank: false, kind: 'condition', id: s.id, if: s.if, within_hours: s.within_hours, then: s.then, else: s.else, variants: variantSlots([]) };
    return {
      ...BLANK,
      blank: false,
      kind: s.variants ? 'ab' : 'email',
      id: s.id ?? '',
      delay_hours: s.delay_hours,
      next: s.next ?? '',
      template: s.template ?? null,
      subject: s.subject ?? '',
      body: s.body ?? '',
      variants: variantSlots(s.variants ?? []),
      metric: s.winner?.metric ?? '',
      after_hours: s.winner?.after_hours ?? '',
      min_sample: s.winner?.min_sample ?? '',
    };
  });
  return [...rows, ...Array.from({ length: blanks }, () => ({ ...BLANK, variants: variantSlots([]) }))];
}

/** Text as stored: a browser sends a textarea's line breaks as CRLF; the admin API's JSON has them as written. */
const text = (value: string | undefined) => (value ? value.replace(/\r\n/g, '\n') : undefined);

const given = <T extends Record<string, unknown>>(value: T): T => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== '')) as T;

/**
 * The posted rows as the admin API's `steps`, in the order of their positions. A numbered id that no condition or
 * `next` names is left out, so it follows its step's position (a step added at the top becomes 1); a named id, a
 * condition's and one another step names stay as typed.
 */
export function stepsOfForm(req: Request): unknown[] {
  // none left: the schema says a campaign keeps at least one step
  const rows = formRows(req, 'step').filter((row) => Object.entries(row).some(([k, v]) => k !== 'kind' && v !== ''));
  const kindOf = (row: Record<string, string>): Kind => (KINDS.includes(row.kind as Kind) ? (row.kind as Kind) : 'email');
  const named = new Set(rows.flatMap((row) => (kindOf(row) === 'condition' ? [row.then, row.else] : [row.next])).filter(Boolean));
  const idOf = (row: Record<string, string>) => (row.id && (!/^\d+$/.test(row.id) || named.has(row.id)) ? row.id : undefined);
  return rows.map((row) => {
    const kind = kindOf(row);
    if (kind === 'condition') return given({ id: row.id, type: 'condition', if: row.if, within_hours: typedNumber(row.within_hours), then: row.then, else: row.else });
    const common = { id: idOf(row), delay_hours: typedNumber(row.delay_hours), next: row.next };
    if (kind === 'email') return given({ ...common, subject: row.subject, body: text(row.body), template: templateChoice(row.template) });
    const variants = VARIANT_LETTERS.filter((l) => row[`${l}_subject`] || row[`${l}_body`]).map((l) =>
      given({ subject: row[`${l}_subject`], body: text(row[`${l}_body`]), weight: typedNumber(row[`${l}_weight`]) }),
    );
    const winner = row.metric || row.after_hours || row.min_sample ? given({ metric: row.metric, after_hours: typedNumber(row.after_hours), min_sample: typedNumber(row.min_sample) }) : undefined;
    return given({ ...common, variants, winner });
  });
}

/** The work of a steps form (its reading, the schema's check, the domain's), a refusal of it put in the editor's words. */
export const inEditorTerms = <T>(work: () => Promise<T>): Promise<T> =>
  Promise.resolve()
    .then(work)
    .catch((err: unknown) => {
      throw err instanceof BadRequest ? new BadRequest(inEditorWords(err.message)) : err;
    });

/** A refusal of the admin API's words (`steps[2].variants[0].subject: ...`) in the editor's: step 3, variant A. */
export function inEditorWords(message: string): string {
  const variant = (v: string) => String.fromCharCode(65 + Number(v));
  return message
    .replace(/steps\[(\d+)\]\.variants\[(\d+)\](\.)?/g, (_m, s: string, v: string, dot: string) => `step ${Number(s) + 1}, variant ${variant(v)}${dot ? ': ' : ''}`)
    .replace(/steps\[(\d+)\](\.)?/g, (_m, s: string, dot: string) => `step ${Number(s) + 1}${dot ? ': ' : ''}`);
}

const STEP_IDS = `<datalist id="step-ids"><% it.stepRows.forEach(function (s) { if (s.id) { %><option value="<%= s.id %>"><% } }) %></datalist>`;
const target = (name: string, label: string) => `<label>${label} <input name="step<%= i %>.${name}" value="<%= s.${name} %>" list="step-ids" maxlength="64" size="10"></label>`;

const HOW = `<p class="muted">Each step is an <strong>email</strong> (its own subject and body, or a stored template), an <strong>A/B test</strong> (two to ten variants, each prospect getting one by its weight, and an optional rule that picks a winner) or a <strong>condition</strong> (sends nothing: waits up to its hours for what it asks, then goes on along <em>then</em> or <em>else</em>). An email waits its hours after the step before it and goes on to <em>next</em>, or to the step below it. Only the fields of a step's kind are used. Ids name steps for conditions and <em>next</em>; a numbered id nothing names follows its position. Reorder with the positions; a removed or blank step (and a variant left blank) is left out; at least one step stays.</p>`;

/** The rows (`it.stepRows`, `it.templates`, `it.conditions`, `it.metrics`), and a link to the page (`more`) with more blank ones. */
const stepRowsOf = (more: string) => `${HOW}
${STEP_IDS}
<% it.stepRows.forEach(function (s, i) { var n = i + 1; %><fieldset class="row step"><legend><%= s.blank ? 'New step' : 'Step ' + n %></legend>
<label>Id <input name="step<%= i %>.id" value="<%= s.id %>" maxlength="64" size="10" pattern="[A-Za-z0-9_\\-]{1,64}"></label>
<label>Kind <select name="step<%= i %>.kind"><option value="email"<% if (s.kind === 'email') { %> selected<% } %>>email</option><option value="ab"<% if (s.kind === 'ab') { %> selected<% } %>>A/B test</option><option value="condition"<% if (s.kind === 'condition') { %> selected<% } %>>condition</option></select></label>
<fieldset class="group"><legend>Email and A/B test</legend>
<label>After (hours) <input type="number" name="step<%= i %>.delay_hours" min="0" step="any" value="<%= s.delay_hours %>"></label>
${target('next', 'Next step (blank: the one below)')}
</fieldset>
<details class="kind"<% if (s.kind === 'email') { %> open<% } %>><summary>Email: template or subject and body</summary>
${STEP_TEMPLATE}
<label>Subject <input name="step<%= i %>.subject" maxlength="300" value="<%= s.subject %>"></label>
<label>Body <textarea name="step<%= i %>.body" rows="4"><%= s.body %></textarea></label>
</details>
<details class="kind"<% if (s.kind === 'ab') { %> open<% } %>><summary>A/B test: variants and winner rule</summary>
<% s.variants.forEach(function (v) { var V = v.letter.toUpperCase(); %><fieldset class="group variant"><legend>Variant <%= V %></legend>
<label>Subject <input name="step<%= i %>.<%= v.letter %>_subject" maxlength="300" value="<%= v.subject %>" aria-label="Step <%= n %>, variant <%= V %>: subject"></label>
<label>Weight <input type="number" name="step<%= i %>.<%= v.letter %>_weight" min="0" step="any" value="<%= v.weight %>" placeholder="1" aria-label="Step <%= n %>, variant <%= V %>: weight"></label>
<label>Body <textarea name="step<%= i %>.<%= v.letter %>_body" rows="3" aria-label="Step <%= n %>, variant <%= V %>: body"><%= v.body %></textarea></label>
</fieldset><% }) %>
<label>Winner by <select name="step<%= i %>.metric"><option value="">no winner rule</option><% it.metrics.forEach(function (m) { %><option<% if (m === s.metric) { %> selected<% } %>><%= m %></option><% }) %></select></label>
<label>After (hours) <input type="number" name="step<%= i %>.after_hours" min="0" step="any" value="<%= s.after_hours %>" aria-label="Step <%= n %>: winner after (hours)"></label>
<label>Least per variant <input type="number" name="step<%= i %>.min_sample" min="1" step="1" value="<%= s.min_sample %>"></label>
</details>
<details class="kind"<% if (s.kind === 'condition') { %> open<% } %>><summary>Condition: what it asks and where it goes</summary>
<label>If <select name="step<%= i %>.if"><option value="">choose</option><% it.conditions.forEach(function (c) { %><option<% if (c === s.if) { %> selected<% } %>><%= c %></option><% }) %></select></label>
<label>Within (hours) <input type="number" name="step<%= i %>.within_hours" min="0" step="any" value="<%= s.within_hours %>"></label>
${target('then', 'Then')}
${target('else', 'Else')}
</details>
${rowControls('step', 'Step')}
</fieldset><% }) %>
<p><a href="${more}">More blank steps</a> (to add a branch and its steps in one save)</p>`;

/** The campaign page's editor (and `it.campaign`). */
export const STEPS_EDITOR = `<form method="post" action="/admin/campaigns/<%= it.campaign.id %>/steps" class="card" id="steps">${CSRF_FIELD}
<h2>Edit the steps</h2>
${stepRowsOf('/admin/campaigns/<%= it.campaign.id %>?blank=4#steps')}
<button>Save the steps</button>
</form>`;

/** The new campaign form's steps. */
export const NEW_CAMPAIGN_STEPS = `<fieldset class="group" id="new-steps"><legend>Steps</legend>
${stepRowsOf('/admin/campaigns?blank=4#new-campaign')}
</fieldset>`;

/** What the editor's template reads besides the rows. */
export const STEP_CHOICES = { conditions: CONDITIONS, metrics: WINNER_METRICS };

/** How many blank rows the page shows: `?blank=n` (1 to 10), else one. */
export const blankRows = (value: string): number => (/^(?:[1-9]|10)$/.test(value) ? Number(value) : 1);
