import { DomUtils, parseDocument } from 'htmlparser2';
import type { Broadcast, List } from '../../../../generated/prisma/client';
import { config } from '../config';
import type { Db } from '../db';
import { renderSubject, renderTemplate, type TemplateContext } from '../templates/render';
import { storedSource } from '../templates/service';

/**
 * A public list's archive (docs/preferences.md): the broadcasts sent with `archive: true`, rendered for nobody (every
 * personal merge field empty, so Liquid's `default` filter gives its default: `{{ name | default: "reader" }}`), with
 * the unsubscribe, preference-centre and tracking links taken out. A private list has no archive (404).
 */

/** What a removed link renders as while the archive is made: an address no sender writes, found and taken out after. */
const REMOVED = 'https://archive.invalid/removed';

const NOBODY: TemplateContext = { name: '', email: '', unsubscribe_url: REMOVED, preferences_url: REMOVED, fields: {} };

export interface ArchivedIssue {
  id: number;
  subject: string;
  html: string;
  text: string;
  /** when it went out (finished, else started) */
  at: Date;
}

/** The public list of this key, or null when there is none or it is private. */
export async function publicList(db: Db, key: string): Promise<List | null> {
  const list = await db.list.findUnique({ where: { key } });
  return list?.public ? list : null;
}

/** The list's archived broadcasts that went out, newest first (at most `limit`). */
export async function archivedIssues(db: Db, list: List, limit = 50): Promise<ArchivedIssue[]> {
  const rows = await db.broadcast.findMany({
    where: { listId: list.id, archive: true, status: { in: ['sending', 'sent'] } },
    orderBy: { id: 'desc' },
    take: limit,
  });
  return Promise.all(rows.map((b) => issueOf(db, b)));
}

/** One archived broadcast of the list; null when it is not in its archive. */
export async function archivedIssue(db: Db, list: List, id: number): Promise<ArchivedIssue | null> {
  const b = await db.broadcast.findFirst({ where: { id, listId: list.id, archive: true, status: { in: ['sending', 'sent'] } } });
  return b ? issueOf(db, b) : null;
}

async function issueOf(db: Db, b: Broadcast): Promise<ArchivedIssue> {
  // the sources as they are (a template's html inside its layout), never a copy: copies carry their reader's links
  const source = b.templateId === null ? b : await storedSource(db, b.templateId);
  const html = source.html === null ? null : withoutPersonalLinks(renderTemplate(source.html, NOBODY, 'html'));
  const text = source.text === null ? null : withoutPersonalText(renderTemplate(source.text, NOBODY));
  return {
    id: b.id,
    subject: renderSubject(source.subject, NOBODY),
    html: html ?? `<pre>${escapeText(text ?? '')}</pre>`,
    text: text ?? DomUtils.textContent(parseDocument(html ?? '')).trim(),
    at: b.finishedAt ?? b.startedAt ?? b.createdAt,
  };
}

/** Is this link one that names a reader: the removed placeholders, a tracked click, an unsubscribe or preference link? */
function personal(url: string): boolean {
  const base = config().publicUrl;
  return url === REMOVED || ['/c/', '/o/', '/u/', '/preferences/'].some((path) => url.startsWith(`${base}${path}`));
}

/** The html without its personal links (the anchor and what it holds) and open pixels. */
export function withoutPersonalLinks(html: string): string {
  const doc = parseDocument(html);
  const found = DomUtils.findAll((el) => (el.name === 'a' && personal(el.attribs.href ?? '')) || (el.name === 'img' && personal(el.attribs.src ?? '')), doc.children);
  for (const el of found) DomUtils.removeElement(el);
  return DomUtils.getOuterHTML(doc);
}

/** A text part without its personal links: each is taken out with the short label before it ("Leave: <link>"). */
function withoutPersonalText(text: string): string {
  const lines = text.split('\n').flatMap((line) => {
    const words = line.split(/\s+/);
    const kept = words.filter((word) => !personal(word.replace(/^[<(]+|[>).,;]+$/g, '')));
    if (kept.length === words.length) return [line];
    const rest = kept.join(' ').replace(/\s*[^.!?:]{1,40}:$/, '').trim();
    return rest ? [rest] : [];
  });
  return lines.join('\n');
}

const escapeText = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
