import type { Request, Response } from 'express';
import { listAccounts } from '../../../../core/src/accounts';
import { AppError } from '../../../../core/src/errors';
import { escapeHtml } from '../../../../core/src/subscribers/html';
import * as schemas from '../../../../core/src/templates/schema';
import { changeTemplate, createTemplate, deleteTemplate, getTemplate, listTemplates, listVersions, previewDraft, restoreVersion } from '../../../../core/src/templates/service';
import { idParam, validate } from '../../../../core/src/validate';
import type { Tx } from '../../../../core/src/db';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { sendTestEmail } from '../../../../core/src/sending/template-test';
import { templateVariables, variablesFromPaths } from '../../../../core/src/templates/variables';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { viewScope, field, numberField, type ConsolePage } from '../page';
import type { Db } from '../../../../core/src/db';
import { creation, templateChange } from '../../../../core/src/changes';
import { audit, holdTo } from '../../middleware/audit';

/**
 * The preview frame's document: the email's own html, shown in an iframe with `sandbox` (no scripts, an origin of its
 * own) and answered with a CSP that says the same, so an email's markup never runs in the console.
 */
const PREVIEW_CSP = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src http: https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'";

function previewDocument(email: { subject: string; html: string | null; text: string | null } | { error: string }): string {
  if ('error' in email) return `<!doctype html><meta charset="utf-8"><p style="color:#b00020;font:14px sans-serif" id="preview-error">${escapeHtml(email.error)}</p>`;
  const head = `<div style="font:13px sans-serif;border-bottom:1px solid #ccc;padding:6px;margin-bottom:8px"><strong>Subject:</strong> <span id="preview-subject">${escapeHtml(email.subject)}</span></div>`;
  const text = email.text === null ? '' : `<pre id="preview-text" style="border-top:1px solid #ccc;padding:6px;white-space:pre-wrap">${escapeHtml(email.text)}</pre>`;
  return `<!doctype html><meta charset="utf-8">${head}${email.html ?? ''}${text}`;
}

/** The form's content fields as the admin API's (only those the form has). */
function contentFields(req: Request): Record<string, unknown> {
  const required = field(req, 'required');
  const layout = field(req, 'layout');
  return {
    subject: field(req, 'subject'),
    html: field(req, 'html') || null,
    text: field(req, 'text') || null,
    layout: layout === '' ? null : /^[0-9]+$/.test(layout) ? Number(layout) : layout,
    required: required ? required.split(',').map((s) => s.trim()).filter(Boolean) : [],
  };
}

/** The variables typed in a form's generated fields (`var.<path>`, one per variable the template reads). */
function variablesField(req: Request): Record<string, unknown> {
  const typed = Object.entries((req.body ?? {}) as Record<string, unknown>).filter(([name, value]) => name.startsWith('var.') && typeof value === 'string');
  const variables = variablesFromPaths(Object.fromEntries(typed.map(([name, value]) => [name.slice(4), (value as string).trim()])));
  return validate(schemas.previewInput, { variables }).variables;
}

/** A form's fields for the template's variables (`it.variables`: their paths), each its own labelled input. */
const VARIABLE_FIELDS = (form: string) => `<% if (it.variables.length) { %><fieldset class="group"><legend>Variables</legend>
<% it.variables.forEach(function (v) { %><label><code><%= v %></code> <input name="var.<%= v %>" id="${form}-var-<%= v %>"></label><% }) %></fieldset><% } else { %><p class="muted">This template reads no variables.</p><% } %>`;

const EDITOR_FIELDS = `<label>Subject <input name="subject" maxlength="1000" size="70" value="<%= it.t.subject %>"></label>
<label>HTML <textarea name="html" rows="14" cols="90"><%= it.t.html || '' %></textarea></label>
<label>Text (made from the HTML when empty) <textarea name="text" rows="6" cols="90"><%= it.t.text || '' %></textarea></label>
<% if (it.t.kind === 'template') { %><label>Layout (id or alias; empty: none) <input name="layout" value="<%= it.t.layout === null ? '' : it.t.layout %>"></label>
<label>Required variables (comma separated) <input name="required" value="<%= it.t.required.join(', ') %>"></label><% } %>`;

export const templatesPage: ConsolePage = {
  path: '/templates',
  title: 'Templates',
  templates: {
    templates: `<table><thead><tr><th>Id</th><th>Account</th><th>Name</th><th>Alias</th><th>Kind</th><th>Version</th><th>Changed</th></tr></thead><tbody>
<% it.templates.forEach(function (t) { %><tr><td><%= t.id %></td><td><%= t.account %></td><td><a href="/admin/templates/<%= t.id %>"><%= t.name %></a></td><td><code><%= t.alias || '' %></code></td><td><%= t.kind %></td><td><%= t.version %></td><td><%= t.updated_at %></td></tr><% }) %>
</tbody></table>
<% if (!it.templates.length) { %><p class="muted">No templates.</p><% } %>
<form method="post" action="/admin/templates" class="card">${CSRF_FIELD}
<h2>New template or layout</h2>
${ACCOUNT_SELECT}
<label>Kind <select name="kind"><option value="template">template</option><option value="layout">layout (its HTML holds {{ content }})</option></select></label>
<label>Name <input name="name" required maxlength="200"></label>
<label>Alias (optional) <input name="alias" maxlength="100" pattern="[A-Za-z0-9][A-Za-z0-9_-]*"></label>
<label>Subject <input name="subject" maxlength="1000" size="60"></label>
<label>HTML <textarea name="html" rows="8" cols="80"></textarea></label>
<label>Text <textarea name="text" rows="4" cols="80"></textarea></label>
<p class="muted">Liquid: {{ name }}, {{ fields.city | default: "there" }}, {% if vip %}...{% endif %}. Values are HTML-escaped in the HTML part. See docs/templates.md.</p>
<button>Create</button>
</form>`,
    template: `<p><a href="/admin/templates">All templates</a> · account <%= it.t.account %> · <%= it.t.kind %><% if (it.t.alias) { %> · alias <code><%= it.t.alias %></code><% } %> · version <strong id="template-version"><%= it.t.version %></strong></p>
<form method="post" action="/admin/templates/<%= it.t.id %>" class="card" id="editor">${CSRF_FIELD}
<h2>Edit <%= it.t.name %></h2>
${EDITOR_FIELDS}
${VARIABLE_FIELDS('editor')}
<p class="muted">The variables are the saved version's; values typed here only show the preview.</p>
<button>Save as a new version</button>
<button formaction="/admin/templates/<%= it.t.id %>/preview" formtarget="preview" id="preview-button">Preview</button>
</form>
<h2>Preview</h2>
<p class="muted">Shown in a sandboxed frame: the email's markup runs no script here.</p>
<iframe name="preview" id="preview" title="Preview" sandbox src="/admin/templates/<%= it.t.id %>/preview" width="100%" height="480"></iframe>
<% if (it.t.kind === 'template') { %><form method="post" action="/admin/templates/<%= it.t.id %>/test" class="card" id="test-send">${CSRF_FIELD}
<h2>Send a test</h2>
<p class="muted">The saved version, rendered with these values, sent to one address from a mailbox of the account.</p>
<label>To <input type="email" name="to" required maxlength="254" size="36"></label>
<label>From <select name="mailbox"><% it.mailboxes.forEach(function (m) { %><option value="<%= m.id %>"><%= m.address %></option><% }) %></select></label>
${VARIABLE_FIELDS('test')}
<button>Send the test</button>
</form><% } %>
<h2>Versions</h2>
<table><thead><tr><th>Version</th><th>Subject</th><th>Saved</th><th></th></tr></thead><tbody>
<% it.versions.forEach(function (v) { %><tr><td><%= v.version %></td><td><%= v.subject %></td><td><%= v.created_at %></td>
<td><% if (v.version !== it.t.version) { %><form method="post" action="/admin/templates/<%= it.t.id %>/restore" class="inline">${CSRF_FIELD}<input type="hidden" name="version" value="<%= v.version %>"><button>Restore</button></form><% } else { %>current<% } %></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/templates/<%= it.t.id %>/delete" class="inline">${CSRF_FIELD}<button>Delete</button></form>`,
  },
  routes(router, ctx) {
    const show = async (req: Request, res: Response, id: number) => {
      const [t, versions] = await Promise.all([getTemplate(ctx.db, id), listVersions(ctx.db, id)]);
      const mailboxes = await listMailboxes(ctx.db, t.account);
      ctx.render(req, res, 'template', `Template ${t.id}: ${t.name}`, { t, versions, variables: templateVariables(t), mailboxes });
    };
    const sendPreview = (res: Response, email: Parameters<typeof previewDocument>[0], status = 200) => {
      res.status(status).set({ 'Content-Security-Policy': PREVIEW_CSP, 'X-Frame-Options': 'SAMEORIGIN', 'Cache-Control': 'no-store' }).type('html').send(previewDocument(email));
    };
    const preview = async (res: Response, render: () => Promise<{ subject: string; html: string | null; text: string | null }>) => {
      try {
        sendPreview(res, await render());
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        sendPreview(res, { error: err.message }, err.status);
      }
    };

    router.get('/templates', async (req, res) => {
      const [templates, accounts] = await Promise.all([listTemplates(ctx.db, viewScope(res)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'templates', 'Templates', { templates, accounts });
    });
    router.post('/templates', async (req, res) => {
      const input = validate(schemas.templateInput, {
        account: numberField(req, 'account'),
        kind: field(req, 'kind') || 'template',
        name: field(req, 'name'),
        ...(field(req, 'alias') ? { alias: field(req, 'alias') } : {}),
        subject: field(req, 'subject'),
        html: field(req, 'html') || null,
        text: field(req, 'text') || null,
      });
      const t = await audit(req, res, 'console')(ctx.db, creation('template'), (db: Db) => createTemplate(db, input));
      await ctx.redirect(req, res, `/admin/templates/${t.id}`, `Template ${t.id} created (version 1).`);
    });
    router.get('/templates/:id', async (req, res) => show(req, res, validate(idParam, req.params.id)));
    router.post('/templates/:id', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const current = await getTemplate(ctx.db, id);
      const fields = contentFields(req);
      if (current.kind === 'layout') {
        delete fields.layout;
        delete fields.required;
      }
      const changes = validate(schemas.templateChanges, fields);
      const t = await audit(req, res, 'console')(ctx.db, templateChange('update', id), (db: Db) => changeTemplate(db, id, changes));
      await ctx.redirect(req, res, `/admin/templates/${id}`, `Saved as version ${t.version}.`);
    });
    router.get('/templates/:id/preview', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await preview(res, async () => {
        const t = await getTemplate(ctx.db, id);
        return previewDraft(ctx.db, id, {}, Object.fromEntries(t.required.map((name) => [name, `(${name})`])));
      });
    });
    router.post('/templates/:id/preview', async (req, res) => {
      const id = validate(idParam, req.params.id);
      // a missing template is the preview's own answer (below)
      const owner = await getTemplate(ctx.db, id).then((t) => t.account, () => undefined);
      if (owner !== undefined) holdTo(req, res, owner);
      await preview(res, async () => {
        const current = await getTemplate(ctx.db, id);
        const fields = contentFields(req);
        if (current.kind === 'layout') {
          delete fields.layout;
          delete fields.required;
        }
        return previewDraft(ctx.db, id, validate(schemas.templateChanges, fields), variablesField(req));
      });
    });
    // one test email of the saved version (sending/template-test.ts), audited as the admin API's
    router.post('/templates/:id/test', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const input = validate<{ to: string; variables: Record<string, unknown>; mailbox?: number }>(schemas.testSendInput, { to: field(req, 'to'), variables: variablesField(req), mailbox: numberField(req, 'mailbox') });
      const change = { action: 'test-send', resource: 'template', id, after: (m: unknown) => m, accountIn: async (tx: Tx) => (await getTemplate(tx, id)).account };
      const message = await audit(req, res, 'console')(ctx.db, change, (db) => sendTestEmail(db, id, input));
      await ctx.redirect(req, res, `/admin/templates/${id}#test-send`, `Test email to ${message.to} queued: "${message.subject}" (message ${message.id}).`);
    });
    router.post('/templates/:id/restore', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const { version } = validate(schemas.restoreInput, { version: numberField(req, 'version') });
      const t = await audit(req, res, 'console')(ctx.db, templateChange('restore', id), (db: Db) => restoreVersion(db, id, version));
      await ctx.redirect(req, res, `/admin/templates/${id}`, `Restored as version ${t.version}.`);
    });
    router.post('/templates/:id/delete', async (req, res) => {
      const id = validate(idParam, req.params.id);
      await audit(req, res, 'console')(ctx.db, { ...templateChange('delete', id), after: undefined }, (db: Db) => deleteTemplate(db, id));
      await ctx.redirect(req, res, '/admin/templates', `Template ${id} deleted.`);
    });
  },
};
