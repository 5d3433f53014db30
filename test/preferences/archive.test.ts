import Parser from 'rss-parser';
import request from 'supertest';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { addSubscriber, broadcastTenant, waitStatus } from '../broadcasts/support';

/**
 * The public archive (docs/preferences.md): a public list's archived broadcasts on a page and in an Atom feed, read
 * here by a feed parser (rss-parser), rendered for nobody (merge fields at their Liquid defaults) without unsubscribe,
 * preference or tracking links; a broadcast not archived is not there; a private list has no archive (404).
 */
const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);

async function sent(list: string, body: Record<string, unknown>) {
  const created = await admin().post('/admin/api/broadcasts').send({ list, ...body });
  expect(created.status).toBe(201);
  await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
  await waitStatus(created.body.broadcast.id, 'sent');
  return created.body.broadcast.id as number;
}

const HTML = `<p>Hello {{ name | default: "reader" }} from {{ fields.city | default: "somewhere" }}, {{ email }}!</p>
<p><a href="https://example.org/garden">Read about the garden</a></p>
<p><a href="{{ unsubscribe_url }}">Unsubscribe</a> or <a href="{{ preferences_url }}">choose topics</a></p>`;

describe('the public archive', () => {
  it('shows archived broadcasts with personal fields at their defaults and no personal or tracking links, in a page and an Atom feed', async () => {
    const t = await broadcastTenant(sink.url);
    await admin().patch(`/admin/api/lists/${t.listId}`).send({ public: true });
    await addSubscriber(t.listId, 'ann@archive.test', { name: 'Ann', fields: { city: 'Oslo' } });
    const first = await sent(t.list.key, { subject: 'Issue 1 for {{ name | default: "you" }}', html: HTML, archive: true, track_clicks: true, track_opens: true });
    const hidden = await sent(t.list.key, { subject: 'Members only', text: 'Not for the archive', archive: false });
    const second = await sent(t.list.key, { subject: 'Issue 2', text: 'Plain words, {{ name | default: "friend" }}. Leave: {{ unsubscribe_url }}\nMore soon.' });
    // Ann's own copy was personal and tracked
    const copy = sink.to('ann@archive.test').find((m) => m.parsed.subject === 'Issue 1 for Ann')!.parsed.html as string;
    expect(copy).toContain('Hello Ann from Oslo');
    expect(copy).toContain('http://mail.test/c/');

    const page = await request(app.api.app).get(`/archive/${t.list.key}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<link rel="alternate" type="application/atom+xml" title="The &lt;Weekly&gt; &amp; Co" href="http://mail.test/archive/${t.list.key}/feed.xml">`);
    expect(page.text).toContain('Issue 1 for you');
    expect(page.text).not.toContain('Members only');
    expect(page.text).not.toContain('Issue 2');

    const feedRes = await request(app.api.app).get(`/archive/${t.list.key}/feed.xml`);
    expect(feedRes.status).toBe(200);
    expect(feedRes.headers['content-type']).toBe('application/atom+xml; charset=utf-8');
    const feed = await new Parser().parseString(feedRes.text);
    expect(feed.title).toBe('The <Weekly> & Co');
    expect(feed.link).toBe(`http://mail.test/archive/${t.list.key}`);
    expect(feed.items).toHaveLength(1);
    const [entry] = feed.items;
    expect(entry!.title).toBe('Issue 1 for you');
    expect(entry!.link).toBe(`http://mail.test/archive/${t.list.key}/${first}`);
    expect(entry!.id).toBe(`http://mail.test/archive/${t.list.key}/${first}`);
    expect(Date.parse(entry!.isoDate!)).not.toBeNaN();
    const content = entry!.content!;
    expect(content).toContain('Hello reader from somewhere, !');
    expect(content).toContain('<a href="https://example.org/garden">Read about the garden</a>');
    for (const personal of ['Ann', 'Oslo', 'ann@archive.test', '/u/', '/c/', '/o/', '/preferences/', 'archive.invalid', 'Unsubscribe</a>', 'choose topics']) {
      expect(content).not.toContain(personal);
    }

    const issue = await request(app.api.app).get(`/archive/${t.list.key}/${first}`);
    expect(issue.status).toBe(200);
    expect(issue.text).toContain('Hello reader from somewhere');
    expect(issue.text).not.toContain('/u/');
    expect((await request(app.api.app).get(`/archive/${t.list.key}/${hidden}`)).status).toBe(404);

    // archived once sent: the text-only issue, without its unsubscribe line
    const archived = await admin().patch(`/admin/api/broadcasts/${second}`).send({ archive: true });
    expect(archived.status).toBe(200);
    expect(archived.body.broadcast).toMatchObject({ status: 'sent', archive: true });
    const again = await new Parser().parseString((await request(app.api.app).get(`/archive/${t.list.key}/feed.xml`)).text);
    expect(again.items.map((i) => i.title)).toEqual(['Issue 2', 'Issue 1 for you']);
    expect(again.items[0]!.contentSnippet).toContain('Plain words, friend.');
    expect(again.items[0]!.content).not.toContain('Leave:');
    expect(again.items[0]!.content).toContain('More soon.');
  });

  it('a private list has no archive: its page, feed and issues answer 404', async () => {
    const t = await broadcastTenant(sink.url);
    await addSubscriber(t.listId, 'bo@archive.test');
    const id = await sent(t.list.key, { subject: 'Private', text: 'Only for members', archive: true });
    for (const path of [`/archive/${t.list.key}`, `/archive/${t.list.key}/feed.xml`, `/archive/${t.list.key}/${id}`, '/archive/no-such-list/feed.xml']) {
      const res = await request(app.api.app).get(path);
      expect(res.status).toBe(404);
      expect(res.text).not.toContain('Only for members');
    }
  });
});
