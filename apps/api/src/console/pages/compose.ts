import type { Request, Response } from 'express';
import type { AudienceInput, Engagement } from '../../../../core/src/broadcasts/schema';
import { BadRequest } from '../../../../core/src/errors';
import type { TemplateView } from '../../../../core/src/templates/service';
import { templateVariables, variablesFromPaths } from '../../../../core/src/templates/variables';
import { CSRF_FIELD } from '../views';
import { formRows, typedNumber, words } from '../editors';

/**
 * The broadcast compose form (pages/broadcasts.ts) as fields, not JSON: the list, a stored template with its variables
 * or the email's own subject and body, and the segment builder (tags, fields, engagement, dates) with its count. The
 * form posts back to itself to count or preview (kept as typed), or to save the draft; a small script of the console's
 * own origin counts as the segment changes (`/admin/static/audience.js`), and without it the Count button does.
 */

/** The form's words for each engagement of the admin API's `audience.engaged` (broadcasts/schema.ts), one each. */
const ENGAGEMENT_LABELS: Record<keyof Engagement, string> = {
  opened: 'opened broadcast',
  clicked: 'clicked in broadcast',
  not_opened: 'got and did not open broadcast',
  not_clicked: 'got and did not click in broadcast',
};
/** Field conditions the form shows: the ones typed and blank ones up to this many. */
const FIELD_ROWS = 3;

/** The compose form as typed: what a re-rendered form shows again. */
export interface Draft {
  list: string;
  template: string;
  subject: string;
  html: string;
  text: string;
  send_at: string;
  track_clicks: boolean;
  track_opens: boolean;
  tags: string;
  fields: { name: string; value: string }[];
  engaged_how: string;
  engaged_broadcast: string;
  subscribed_after: string;
  subscribed_before: string;
  /** the preview's values of the template's variables, by path */
  variables: Record<string, string>;
}

const text = (source: Record<string, unknown>, name: string): string => {
  const value = source[name];
  return typeof value === 'string' ? value.trim() : '';
};

/** The draft of a form (a POST's body) or of the live count's query. */
export function draftOf(source: Record<string, unknown>): Draft {
  const variables: Record<string, string> = {};
  for (const [name, value] of Object.entries(source)) if (name.startsWith('var.') && typeof value === 'string') variables[name.slice(4)] = value.trim();
  return {
    list: text(source, 'list'),
    template: text(source, 'template'),
    subject: text(source, 'subject'),
    html: text(source, 'html'),
    text: text(source, 'text'),
    send_at: text(source, 'send_at'),
    track_clicks: text(source, 'track_clicks') !== '',
    track_opens: text(source, 'track_opens') !== '',
    tags: text(source, 'tags'),
    fields: formRows(source, 'field').map((row) => ({ name: row.name ?? '', value: row.value ?? '' })),
    engaged_how: text(source, 'engaged_how'),
    engaged_broadcast: text(source, 'engaged_broadcast'),
    subscribed_after: text(source, 'subscribed_after'),
    subscribed_before: text(source, 'subscribed_before'),
    variables,
  };
}

export const EMPTY_DRAFT: Draft = draftOf({});

/** A typed value as the values it may match: `5` is the text "5" or the number 5, `true` the text or the boolean. */
function matching(value: string): (string | number | boolean)[] {
  if (value === 'true' || value === 'false') return [value, value === 'true'];
  return /^-?\d+(\.\d+)?$/.test(value) ? [value, Number(value)] : [value];
}

/** A day of a date field as the start of that day, UTC; anything else is left for joi to name. */
const dayStart = (day: string) => (/^\d{4}-\d\d-\d\d$/.test(day) ? `${day}T00:00:00Z` : day);

/** The segment of a draft as the admin API's `audience`, or undefined for the whole list. */
export function audienceOf(draft: Draft): AudienceInput | undefined {
  const audience: Record<string, unknown> = {};
  const tags = words(draft.tags);
  if (tags.length) audience.tags = tags;
  const fields: Record<string, unknown> = {};
  for (const row of draft.fields) {
    if (!row.name) {
      if (row.value) throw new BadRequest('audience: a field value needs the field name beside it');
      continue;
    }
    const values = words(row.value).flatMap(matching);
    if (!values.length) throw new BadRequest(`audience: the field "${row.name}" needs a value`);
    fields[row.name] = values.length === 1 ? values[0] : { in: values };
  }
  if (Object.keys(fields).length) audience.fields = fields;
  if (draft.engaged_how || draft.engaged_broadcast) {
    // the choice left empty; any other value is the schema's to refuse
    if (!draft.engaged_how) throw new BadRequest('audience: choose how the reader engaged with the broadcast');
    audience.engaged = { [draft.engaged_how]: typedNumber(draft.engaged_broadcast) };
  }
  if (draft.subscribed_after) audience.subscribed_after = dayStart(draft.subscribed_after);
  if (draft.subscribed_before) audience.subscribed_before = dayStart(draft.subscribed_before);
  return Object.keys(audience).length ? (audience as AudienceInput) : undefined;
}

/** The variables the chosen template reads, with the values typed for the preview. */
export function variableFields(template: TemplateView | undefined, draft: Draft): { path: string; value: string }[] {
  return template ? templateVariables(template).map((path) => ({ path, value: draft.variables[path] ?? '' })) : [];
}

/** The typed values of the template's variables as a render takes them. */
export const previewVariables = (fields: { path: string; value: string }[]) => variablesFromPaths(Object.fromEntries(fields.map((f) => [f.path, f.value])));

/** The rows of the field conditions: the typed ones and blanks up to FIELD_ROWS. */
export function fieldRows(draft: Draft): { name: string; value: string }[] {
  const rows = [...draft.fields];
  while (rows.length < FIELD_ROWS) rows.push({ name: '', value: '' });
  return rows.length > draft.fields.length ? rows : [...rows, { name: '', value: '' }];
}

/** This answer may run the console's own scripts and ask the console itself (the live count): its policy plus those two. */
export function allowComposeScript(res: Response): void {
  const policy = String(res.getHeader('Content-Security-Policy') ?? "default-src 'none'");
  res.setHeader('Content-Security-Policy', `${policy.replace(/;?\s*$/, '')}; script-src 'self'; connect-src 'self'`);
}

/** The query of the live count: the list and the segment's fields only. */
export const COUNT_FIELDS = /^(list|tags|engaged_how|engaged_broadcast|subscribed_after|subscribed_before|field\d{1,3}\.(name|value))$/;

/**
 * The live count: on a change of the segment, after a short pause, a GET of the count for the list and segment as
 * typed; the answer (or the refusal's words) goes in the form's status line. One count at a time: a change made while
 * one runs (a dry run of a large list takes a while) is counted once it is back, so typing never piles them up.
 */
export const AUDIENCE_SCRIPT = `(function () {
  var form = document.getElementById('compose');
  var out = document.getElementById('audience-count');
  if (!form || !out) return;
  var timer = null, running = false, again = false, last = null, fields = ${COUNT_FIELDS.toString()};
  function count() {
    var query = new URLSearchParams();
    new FormData(form).forEach(function (value, name) { if (typeof value === 'string' && fields.test(name)) query.append(name, value); });
    var asked = query.toString();
    if (asked === last) return;
    if (running) { again = true; return; }
    running = true;
    last = asked;
    function done() { running = false; if (again) { again = false; count(); } }
    fetch('/admin/broadcasts/audience?' + asked, { credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (r) { return r.json(); })
      .then(function (a) { out.textContent = a.ok ? 'This audience is ' + a.count + (a.count === 1 ? ' person' : ' people') + ' now.' : a.error; done(); }, function () { last = null; done(); });
  }
  function later() { clearTimeout(timer); timer = setTimeout(count, 300); }
  form.addEventListener('input', later);
  form.addEventListener('change', later);
})();
`;

const LABELS = JSON.stringify(ENGAGEMENT_LABELS);

/** The compose form. `it.draft` is a Draft, `it.lists`, `it.templates`, `it.broadcasts` the pickers' choices. */
export const COMPOSE_FORM = `<form method="post" action="/admin/broadcasts" class="card" id="compose">${CSRF_FIELD}
<h2>New broadcast</h2>
<label>List <select name="list" required><% it.lists.forEach(function (l) { %><option value="<%= l.key %>"<% if (l.key === it.draft.list) { %> selected<% } %>><%= l.name %> (<%= l.key %>, account <%= l.account %>, <%= l.subscribers %> active)</option><% }) %></select></label>
<fieldset class="group"><legend>Content</legend>
<label>Template <select name="template"><option value="">none: the subject and body below</option><% it.templates.forEach(function (t) { %><option value="<%= t.id %>"<% if (String(t.id) === it.draft.template) { %> selected<% } %>><%= t.name %> (account <%= t.account %>)</option><% }) %></select></label>
<% if (it.variables.length) { %><fieldset class="group" id="variables"><legend>The template's variables, for the preview</legend>
<p class="muted">Each reader's copy fills name, email and fields from the subscriber; values typed here only show the preview.</p>
<% it.variables.forEach(function (v) { %><label><code><%= v.path %></code> <input name="var.<%= v.path %>" value="<%= v.value %>"></label><% }) %></fieldset><% } %>
<label>Subject <input name="subject" maxlength="998" size="60" value="<%= it.draft.subject %>"></label>
<label>HTML <textarea name="html" placeholder="&lt;p&gt;Hello {{name}}&lt;/p&gt; ... &lt;a href=&quot;{{unsubscribe_url}}&quot;&gt;Unsubscribe&lt;/a&gt;"><%= it.draft.html %></textarea></label>
<label>Text <textarea name="text" placeholder="Plain text part (made from the HTML when left empty)"><%= it.draft.text %></textarea></label>
<p class="muted">With a template, leave subject and body empty: the template gives them. Placeholders: {{name}}, {{email}}, {{fields.x}}, {{unsubscribe_url}}.</p>
<button formaction="/admin/broadcasts/compose" formnovalidate id="compose-preview">Preview</button>
</fieldset>
<fieldset class="group" id="segment-builder"><legend>Audience (every condition given must hold; none: the whole list)</legend>
<label>Tags (all of them; separated by commas) <input name="tags" value="<%= it.draft.tags %>"></label>
<% it.fieldRows.forEach(function (f, i) { %><div class="pair"><label>Field <input name="field<%= i %>.name" value="<%= f.name %>" placeholder="country"></label> <label>is (one of, separated by commas) <input name="field<%= i %>.value" value="<%= f.value %>" placeholder="DE, AT"></label></div><% }) %>
<div class="pair"><label>Engaged <select name="engaged_how"><option value="">any engagement</option><% Object.entries(${LABELS}).forEach(function (e) { %><option value="<%= e[0] %>"<% if (e[0] === it.draft.engaged_how) { %> selected<% } %>><%= e[1] %></option><% }) %></select></label>
<label>Broadcast <select name="engaged_broadcast"><option value="">none</option><% it.broadcasts.forEach(function (b) { %><option value="<%= b.id %>"<% if (String(b.id) === it.draft.engaged_broadcast) { %> selected<% } %>><%= b.id %> · <%= b.subject %></option><% }) %></select></label></div>
<div class="pair"><label>Subscribed on or after <input type="date" name="subscribed_after" value="<%= it.draft.subscribed_after %>"></label> <label>Subscribed before <input type="date" name="subscribed_before" value="<%= it.draft.subscribed_before %>"></label></div>
<p><output id="audience-count" role="status" aria-live="polite"><%= it.count || '' %></output></p>
<button formaction="/admin/broadcasts/audience" formnovalidate id="count-audience">Count the audience</button>
</fieldset>
<label>Send at (UTC, optional) <input name="send_at" type="datetime-local" value="<%= it.draft.send_at %>"></label>
<label><input name="track_clicks" type="checkbox" value="1"<% if (it.draft.track_clicks) { %> checked<% } %>> Track clicks (links go through this service)</label>
<label><input name="track_opens" type="checkbox" value="1"<% if (it.draft.track_opens) { %> checked<% } %>> Track opens (a 1x1 image; an overestimate, see the docs)</label>
<p class="muted">It is saved as a draft: preview it, then send.</p>
<button>Save draft</button>
</form>
<% if (it.previewError) { %><p class="error" role="alert" id="preview-error">No preview: <%= it.previewError %></p><% } %>
<% if (it.preview) { %><section class="card" id="compose-preview-shown"><h2>Preview</h2>
<p class="muted">As a reader<% if (!it.draft.template) { %> named "Reader"<% } %> would get it<% if (it.draft.template) { %>, with the values typed above<% } %>. The HTML is shown as its source: the console runs no content.</p>
<p><strong>Subject:</strong> <span id="preview-subject"><%= it.preview.subject %></span></p>
<% if (it.preview.html !== null) { %><h3>HTML</h3><pre id="preview-html"><%= it.preview.html %></pre><% } %>
<% if (it.preview.text !== null) { %><h3>Text</h3><pre id="preview-text"><%= it.preview.text %></pre><% } %></section><% } %>
<script src="/admin/static/audience.js" defer></script>`;

/** A request's form or query as a plain record. */
export const sourceOf = (req: Request, from: 'body' | 'query'): Record<string, unknown> => ((from === 'body' ? req.body : req.query) ?? {}) as Record<string, unknown>;
