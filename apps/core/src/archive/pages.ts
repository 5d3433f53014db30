import type { List } from '../../../../generated/prisma/client';
import { config } from '../config';
import { escapeHtml, layout } from '../subscribers/html';
import type { ArchivedIssue } from './service';

/** The public archive's page, an issue's page and the Atom feed (RFC 4287) of a public list (docs/preferences.md). */

export const archivePath = (list: Pick<List, 'key'>) => `/archive/${encodeURIComponent(list.key)}`;
const absolute = (path: string) => `${config().publicUrl}${path}`;
const issuePath = (list: Pick<List, 'key'>, issue: Pick<ArchivedIssue, 'id'>) => `${archivePath(list)}/${issue.id}`;
export const feedPath = (list: Pick<List, 'key'>) => `${archivePath(list)}/feed.xml`;

/** The list of issues, newest first, linking its feed in the head (`<link rel="alternate" type="application/atom+xml">`). */
export function archivePage(list: List, issues: ArchivedIssue[]): string {
  const items = issues.length
    ? `<ul>\n${issues.map((i) => `<li><a href="${escapeHtml(issuePath(list, i))}">${escapeHtml(i.subject)}</a> <time datetime="${i.at.toISOString()}">${i.at.toISOString().slice(0, 10)}</time></li>`).join('\n')}\n</ul>`
    : '<p>Nothing here yet.</p>';
  const page = layout(`${list.name}: archive`, `<h1>${escapeHtml(list.name)}</h1>\n<p><a href="${escapeHtml(feedPath(list))}">Atom feed</a></p>\n${items}`);
  return page.replace('</head>', `<link rel="alternate" type="application/atom+xml" title="${escapeHtml(list.name)}" href="${escapeHtml(absolute(feedPath(list)))}">\n</head>`);
}

/** One issue as it went out, without anything personal (service.ts). */
export function issuePage(list: List, issue: ArchivedIssue): string {
  return layout(
    `${issue.subject} (${list.name})`,
    `<p><a href="${escapeHtml(archivePath(list))}">${escapeHtml(list.name)}: archive</a></p>\n<h1>${escapeHtml(issue.subject)}</h1>\n<article>\n${issue.html}\n</article>`,
  );
}

const xml = (value: string) => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The Atom feed of the archive: one entry per issue, its html as escaped content. */
export function atomFeed(list: List, issues: ArchivedIssue[]): string {
  const updated = (issues[0]?.at ?? list.createdAt).toISOString();
  const entries = issues.map(
    (i) => `<entry>
<id>${xml(absolute(issuePath(list, i)))}</id>
<title>${xml(i.subject)}</title>
<updated>${i.at.toISOString()}</updated>
<published>${i.at.toISOString()}</published>
<link rel="alternate" type="text/html" href="${xml(absolute(issuePath(list, i)))}"/>
<summary>${xml(i.text.slice(0, 280))}</summary>
<content type="html">${xml(i.html)}</content>
</entry>`,
  );
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${xml(absolute(archivePath(list)))}</id>
<title>${xml(list.name)}</title>
<updated>${updated}</updated>
<author><name>${xml(list.name)}</name></author>
<link rel="self" type="application/atom+xml" href="${xml(absolute(feedPath(list)))}"/>
<link rel="alternate" type="text/html" href="${xml(absolute(archivePath(list)))}"/>
${entries.join('\n')}
</feed>
`;
}
