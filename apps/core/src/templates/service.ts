import { accountWhere, type AccountScope } from '../account-scope';
import type { Prisma, Template } from '../../../../generated/prisma/client';
import type { Db, Tx } from '../db';
import { BadRequest, Conflict, NotFound, Unprocessable } from '../errors';
import { requireAccount } from '../accounts';
import { compileEmail, contentSlots, inlineCss, renderEmail, withLayout, type CompiledEmail, type RenderedEmail } from './content';
import { parse, TemplateError } from './engine';
import { TEMPLATE_FIELD_LIMITS, type TemplateChanges, type TemplateInput } from './schema';

/** A template or layout as the admin API and the key's read API answer it. */
export interface TemplateView {
  id: number;
  account: number;
  name: string;
  alias: string | null;
  kind: 'template' | 'layout';
  subject: string;
  html: string | null;
  text: string | null;
  layout: number | null;
  required: string[];
  inline_css: boolean;
  text_from_html: boolean;
  version: number;
  created_at: string;
  updated_at: string;
}

export function templateView(t: Template): TemplateView {
  return {
    id: t.id,
    account: t.accountId,
    name: t.name,
    alias: t.alias,
    kind: t.kind,
    subject: t.subject,
    html: t.html,
    text: t.text,
    layout: t.layoutId,
    required: t.required,
    inline_css: t.inlineCss,
    text_from_html: t.textFromHtml,
    version: t.version,
    created_at: t.createdAt.toISOString(),
    updated_at: t.updatedAt.toISOString(),
  };
}

/** What a version keeps: every field a change can make. */
type Content = Pick<Template, 'name' | 'alias' | 'subject' | 'html' | 'text' | 'layoutId' | 'required' | 'inlineCss' | 'textFromHtml'>;

const contentOf = (t: Content): Content => ({
  name: t.name,
  alias: t.alias,
  subject: t.subject,
  html: t.html,
  text: t.text,
  layoutId: t.layoutId,
  required: t.required,
  inlineCss: t.inlineCss,
  textFromHtml: t.textFromHtml,
});

const isId = (ref: number | string) => typeof ref === 'number' || /^[0-9]+$/.test(ref);

/** The account's template or layout named by id or alias, or null (another account's is as absent as a missing one). */
export async function findTemplate(db: Tx, accountId: number, ref: number | string): Promise<(Template & { layout: Template | null }) | null> {
  if (isId(ref)) {
    const id = Number(ref);
    if (!Number.isSafeInteger(id) || id > 2_147_483_647) return null;
    return db.template.findFirst({ where: { id, accountId }, include: { layout: true } });
  }
  return db.template.findUnique({ where: { accountId_alias: { accountId, alias: String(ref) } }, include: { layout: true } });
}

async function requireTemplate(db: Tx, id: number): Promise<Template & { layout: Template | null }> {
  const t = await db.template.findUnique({ where: { id }, include: { layout: true } });
  if (!t) throw new NotFound(`no template with id ${id}`);
  return t;
}

/** A template's email, compiled: its html inside its layout, CSS inlined and each part parsed, as its options say. */
export function compileTemplate(t: Content & { kind: string }, layout: Pick<Template, 'html'> | null): CompiledEmail {
  return compileEmail(
    { subject: t.subject, html: t.html || null, text: t.text || null },
    { layoutHtml: layout?.html ?? null, inlineCss: t.inlineCss, textFromHtml: t.textFromHtml },
  );
}

/**
 * The checks of a template's content before it is stored (400 naming what is wrong; nothing is written): each part
 * parses, a layout's html holds `{{ content }}`, a template names a layout of its own account and has a body, and its
 * html parses inside that layout.
 */
async function checkContent(db: Tx, accountId: number, kind: string, c: Content): Promise<void> {
  try {
    if (kind === 'layout') {
      if (!c.html) throw new BadRequest('html: a layout needs html holding {{ content }}');
      if (c.layoutId !== null) throw new BadRequest('layout: a layout cannot have a layout of its own');
      compileTemplate({ ...c, kind }, null);
      if (!contentSlots(c.html).length) throw new BadRequest('html: a layout must hold {{ content }} where the template goes');
      return;
    }
    if (!c.html && !c.text) throw new BadRequest('html or text: a template needs at least one of them');
    let layout: Template | null = null;
    if (c.layoutId !== null) {
      layout = await db.template.findFirst({ where: { id: c.layoutId, accountId, kind: 'layout' } });
      if (!layout) throw new BadRequest(`layout: no layout ${c.layoutId} in this account`);
    }
    compileTemplate({ ...c, kind }, layout);
  } catch (err) {
    if (err instanceof TemplateError) throw new BadRequest(`the template does not parse: ${err.message}`);
    throw err;
  }
}

/** A layout named by id or alias, as its id; 400 when the account has no such layout. */
async function layoutIdOf(db: Tx, accountId: number, ref: number | string | null | undefined): Promise<number | null> {
  if (ref === null || ref === undefined) return null;
  const layout = await findTemplate(db, accountId, ref);
  if (!layout || layout.kind !== 'layout') throw new BadRequest(`layout: no layout ${JSON.stringify(ref)} in this account`);
  return layout.id;
}

function conflictOnAlias(err: unknown, alias: string | null | undefined): never {
  if ((err as { code?: string }).code === 'P2002') throw new Conflict(`alias: the account already has a template named ${JSON.stringify(alias)}`);
  throw err;
}

async function keepVersion(tx: Tx, t: Template): Promise<void> {
  await tx.templateVersion.create({ data: { templateId: t.id, version: t.version, content: contentOf(t) as unknown as Prisma.InputJsonValue } });
  await tx.templateVersion.deleteMany({ where: { templateId: t.id, version: { lte: t.version - TEMPLATE_FIELD_LIMITS.versionsKept } } });
}

/** POST /admin/api/templates: a template or a layout, checked whole before anything is written (version 1). */
export async function createTemplate(db: Db, input: TemplateInput): Promise<TemplateView> {
  await requireAccount(db, input.account);
  const content: Content = {
    name: input.name,
    alias: input.alias ?? null,
    subject: input.subject ?? '',
    html: input.html || null,
    text: input.text || null,
    layoutId: await layoutIdOf(db, input.account, input.layout),
    required: input.required ?? [],
    inlineCss: input.inline_css ?? true,
    textFromHtml: input.text_from_html ?? true,
  };
  await checkContent(db, input.account, input.kind, content);
  try {
    const t = await db.$transaction(async (tx) => {
      const created = await tx.template.create({ data: { accountId: input.account, kind: input.kind, ...content } });
      await keepVersion(tx, created);
      return created;
    });
    return templateView(t);
  } catch (err) {
    conflictOnAlias(err, content.alias);
  }
}

/** An account's templates (every account's when none is named, or the scope's: the console), oldest first. */
export async function listTemplates(db: Tx, account: AccountScope, kind?: 'template' | 'layout'): Promise<TemplateView[]> {
  const rows = await db.template.findMany({ where: { ...accountWhere(account), ...(kind ? { kind } : {}) }, orderBy: { id: 'asc' } });
  return rows.map(templateView);
}

export async function getTemplate(db: Tx, id: number): Promise<TemplateView> {
  return templateView(await requireTemplate(db, id));
}

/** Writes `content` as the template's next version (checked first); the last 20 versions are kept. */
async function writeVersion(db: Db, current: Template, content: Content): Promise<TemplateView> {
  await checkContent(db, current.accountId, current.kind, content);
  try {
    const t = await db.$transaction(async (tx) => {
      // the version a send checked is the one it rendered: a change makes the next one (sending/repository.ts)
      const updated = await tx.template.update({ where: { id: current.id }, data: { ...content, version: { increment: 1 } } });
      await keepVersion(tx, updated);
      return updated;
    });
    return templateView(t);
  } catch (err) {
    conflictOnAlias(err, content.alias);
  }
}

/** PATCH /admin/api/templates/:id: any field but the account and the kind; a new version. */
export async function changeTemplate(db: Db, id: number, changes: TemplateChanges): Promise<TemplateView> {
  const current = await requireTemplate(db, id);
  const content = contentOf(current);
  if (changes.name !== undefined) content.name = changes.name;
  if (changes.alias !== undefined) content.alias = changes.alias;
  if (changes.subject !== undefined) content.subject = changes.subject;
  if (changes.html !== undefined) content.html = changes.html || null;
  if (changes.text !== undefined) content.text = changes.text || null;
  if (changes.layout !== undefined) content.layoutId = await layoutIdOf(db, current.accountId, changes.layout);
  if (changes.required !== undefined) content.required = changes.required;
  if (changes.inline_css !== undefined) content.inlineCss = changes.inline_css;
  if (changes.text_from_html !== undefined) content.textFromHtml = changes.text_from_html;
  return writeVersion(db, current, content);
}

/** DELETE /admin/api/templates/:id: refused (409) while a template, broadcast, campaign step or series step uses it. */
export async function deleteTemplate(db: Tx, id: number): Promise<void> {
  await requireTemplate(db, id);
  const [users, broadcasts, steps, seriesSteps] = await Promise.all([
    db.template.count({ where: { layoutId: id } }),
    db.broadcast.count({ where: { templateId: id } }),
    db.campaignStep.count({ where: { templateId: id } }),
    db.seriesStep.count({ where: { templateId: id } }),
  ]);
  if (users || broadcasts || steps || seriesSteps) {
    const what = [users && `${users} template(s)`, broadcasts && `${broadcasts} broadcast(s)`, steps && `${steps} campaign step(s)`, seriesSteps && `${seriesSteps} welcome-series step(s)`]
      .filter(Boolean)
      .join(', ');
    throw new Conflict(`template ${id} is in use by ${what}`);
  }
  await db.template.delete({ where: { id } });
}

export interface VersionView extends Omit<TemplateView, 'id' | 'account' | 'kind' | 'created_at' | 'updated_at'> {
  created_at: string;
}

/** GET /admin/api/templates/:id/versions: the kept versions, newest first. */
export async function listVersions(db: Tx, id: number): Promise<VersionView[]> {
  await requireTemplate(db, id);
  const rows = await db.templateVersion.findMany({ where: { templateId: id }, orderBy: { version: 'desc' } });
  return rows.map((r) => {
    const c = r.content as unknown as Content;
    return {
      version: r.version,
      name: c.name,
      alias: c.alias,
      subject: c.subject,
      html: c.html,
      text: c.text,
      layout: c.layoutId,
      required: c.required,
      inline_css: c.inlineCss,
      text_from_html: c.textFromHtml,
      created_at: r.createdAt.toISOString(),
    };
  });
}

/** POST /admin/api/templates/:id/restore {version}: that version's content as the next version. */
export async function restoreVersion(db: Db, id: number, version: number): Promise<TemplateView> {
  const current = await requireTemplate(db, id);
  const kept = await db.templateVersion.findUnique({ where: { templateId_version: { templateId: id, version } } });
  if (!kept) throw new NotFound(`template ${id} has no kept version ${version} (the last ${TEMPLATE_FIELD_LIMITS.versionsKept} are kept)`);
  return writeVersion(db, current, contentOf(kept.content as unknown as Content));
}

/** A required variable the variables leave out (absent, null or empty), or null. */
export function missingRequired(required: string[], variables: Record<string, unknown>): string | null {
  for (const name of required) {
    const value = Object.prototype.hasOwnProperty.call(variables, name) ? variables[name] : undefined;
    if (value === undefined || value === null || value === '') return name;
  }
  return null;
}

/**
 * A stored template rendered with `variables`: 422 naming the template for a missing required variable or a render that
 * fails (a loop too long, too much output).
 */
export function renderStored(t: Template, compiled: CompiledEmail, variables: Record<string, unknown>, options: { textAtDelivery?: boolean } = {}): RenderedEmail {
  const label = t.alias ? JSON.stringify(t.alias) : String(t.id);
  const missing = missingRequired(t.required, variables);
  if (missing) throw new Unprocessable(`template ${label}: the required variable ${JSON.stringify(missing)} is missing`);
  try {
    return renderEmail(compiled, variables, options);
  } catch (err) {
    if (err instanceof TemplateError) throw new Unprocessable(`template ${label}: ${err.message}`);
    throw err;
  }
}

/** POST /admin/api/templates/:id/preview {variables}: the email as a send with those variables would write it. */
export async function previewTemplate(db: Tx, id: number, variables: Record<string, unknown>): Promise<RenderedEmail> {
  const t = await requireTemplate(db, id);
  if (t.kind === 'layout') {
    const compiled = compileEmail({ subject: '', html: t.html, text: null }, { inlineCss: t.inlineCss, textFromHtml: t.textFromHtml });
    return renderStored(t, compiled, { ...variables, content: variables.content ?? '' });
  }
  return renderStored(t, compileTemplate(t, t.layout), variables);
}

/** The sources of a stored template as a broadcast or a campaign step renders them: its html inside its layout, CSS inlined. */
export interface StoredSource {
  subject: string;
  html: string | null;
  text: string | null;
}

export function sourceOf(t: Template, layout: Pick<Template, 'html'> | null): StoredSource {
  let html = t.html || null;
  if (html !== null && layout?.html) html = withLayout(layout.html, html);
  if (html !== null && t.inlineCss) html = inlineCss(html);
  // html only: delivery makes the text part from the html (null), unless the template says none ('')
  return { subject: t.subject, html, text: t.text || (html !== null && !t.textFromHtml ? '' : null) };
}

/** The sources of template `id` (a broadcast's or a step's), read when its copies are written. */
export async function storedSource(db: Tx, id: number): Promise<StoredSource> {
  const t = await db.template.findUniqueOrThrow({ where: { id }, include: { layout: true } });
  return sourceOf(t, t.layout);
}

/** A template (not a layout) of the account named by id or alias, as its id: 400 naming `field` otherwise. */
export async function templateIdOf(db: Tx, accountId: number, ref: number | string, field = 'template'): Promise<number> {
  const t = await findTemplate(db, accountId, ref);
  if (!t || t.kind !== 'template') throw new BadRequest(`${field}: no template ${JSON.stringify(ref)} in this account`);
  return t.id;
}

/** Bodies written with the request (a broadcast's, a step's) parse as Liquid: 400 naming the field and the line. */
export function checkSources(sources: Record<string, string | null | undefined>): void {
  for (const [field, source] of Object.entries(sources)) {
    if (!source) continue;
    try {
      parse(source, field.endsWith('html') ? 'html' : 'text');
    } catch (err) {
      if (err instanceof TemplateError) throw new BadRequest(`${field} does not parse: ${err.message}${err.line ? ` (line ${err.line})` : ''}`);
      throw err;
    }
  }
}

/**
 * The console editor's live preview: template `id` as the form has it now (not stored), rendered with `variables`. A
 * source that does not parse answers 400 naming the line, a render problem 422, as storing and sending would.
 */
export async function previewDraft(db: Tx, id: number, changes: TemplateChanges, variables: Record<string, unknown>): Promise<RenderedEmail> {
  const current = await requireTemplate(db, id);
  const draft: Template = { ...current, ...contentOf(current) };
  if (changes.subject !== undefined) draft.subject = changes.subject;
  if (changes.html !== undefined) draft.html = changes.html || null;
  if (changes.text !== undefined) draft.text = changes.text || null;
  if (changes.required !== undefined) draft.required = changes.required;
  if (changes.layout !== undefined) draft.layoutId = await layoutIdOf(db, current.accountId, changes.layout);
  const layout = draft.layoutId === null ? null : await db.template.findUnique({ where: { id: draft.layoutId } });
  let compiled: CompiledEmail;
  try {
    compiled =
      draft.kind === 'layout'
        ? compileEmail({ subject: '', html: draft.html, text: null }, { inlineCss: draft.inlineCss, textFromHtml: draft.textFromHtml })
        : compileTemplate(draft, layout);
  } catch (err) {
    if (err instanceof TemplateError) throw new BadRequest(`the template does not parse: ${err.message}`);
    throw err;
  }
  return renderStored(draft, compiled, draft.kind === 'layout' ? { content: '<p>(the template goes here)</p>', ...variables } : variables);
}
