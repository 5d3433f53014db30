import request from 'supertest';
import { clickToken, openToken, readClickToken, trackHtmlLinks, trackTextLinks } from '../../apps/core/src/analytics/tracking';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { makeTenant } from '../helpers/factories';
import { db, rawQuery } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addSubscriber, broadcastTenant, waitStatus } from '../broadcasts/support';

const sink = useMail({ queues: ['delivery', 'broadcast'], concurrency: 10 });
const app = useApi();
const admin = () => asAdmin(app.api);
const today = () => new Date().toISOString().slice(0, 10);
const web = () => request(app.api.app);

/** The links the sender wrote: every list email's footer link to the preference centre (docs/preferences.md) is the service's, never tracked. */
const links = (html: string) => [...html.matchAll(/href=(["'])([^"']+)\1/g)].map((m) => m[2]!).filter((url) => !url.startsWith('http://mail.test/preferences/'));
const pathOf = (url: string) => new URL(url).pathname;

async function statsToday(query: Record<string, number>) {
  const res = await admin().get('/admin/api/stats').query(query);
  return res.body.days.find((d: { date: string }) => d.date === today());
}

describe('click and open tracking (opt-in)', () => {
  it('rewrites the links of a tracked broadcast, redirects with 302, counts people and not scanners, per link', async () => {
    const t = await broadcastTenant(sink.url); // with an endpoint for every event
    await Promise.all(['ann', 'bob', 'cid'].map((n) => addSubscriber(t.listId, `${n}@clicks.org`)));
    const created = await admin()
      .post('/admin/api/broadcasts')
      .send({
        list: t.list.key,
        subject: 'Links',
        html: '<p><a href="https://shop.example/sale?a=1&amp;b=2">Sale</a> <a class="x" href=\'https://blog.example/post\'>Post</a> <a href="mailto:hi@example.org">Mail</a> <a href="{{unsubscribe_url}}">Leave</a></p>',
        track_clicks: true,
        track_opens: true,
      });
    expect(created.status).toBe(201);
    expect(created.body.broadcast).toMatchObject({ track_clicks: true, track_opens: true });
    const id = created.body.broadcast.id as number;
    await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' });
    await waitStatus(id, 'sent');

    const ann = sink.to('ann@clicks.org')[0]!.parsed.html as string;
    const hrefs = links(ann);
    expect(hrefs[0]).toMatch(/^http:\/\/mail\.test\/c\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(hrefs[1]).toMatch(/^http:\/\/mail\.test\/c\//);
    expect(hrefs[2]).toBe('mailto:hi@example.org');
    expect(hrefs[3]).toMatch(/^http:\/\/mail\.test\/u\//); // the unsubscribe link is never tracked
    expect(ann).toMatch(/<img src="http:\/\/mail\.test\/o\/[A-Za-z0-9_.-]+\.gif" width="1" height="1" alt=""/);
    // the text part's links are tracked too
    expect(sink.to('ann@clicks.org')[0]!.parsed.text).toContain('http://mail.test/c/');
    // each copy has its own tokens
    expect(links(sink.to('bob@clicks.org')[0]!.parsed.html as string)[0]).not.toBe(hrefs[0]);

    // at once after delivery: a mail filter's scanner, redirected but not counted; a HEAD likewise
    const scanned = await web().get(pathOf(hrefs[0]!));
    expect(scanned.status).toBe(302);
    expect(scanned.headers.location).toBe('https://shop.example/sale?a=1&b=2');
    expect((await web().head(pathOf(hrefs[1]!))).status).toBe(302);

    // later, people: ann clicks the sale twice and the post once, bob the sale once
    await rawQuery(db(), `UPDATE messages SET sent_at = now() - interval '1 minute' WHERE broadcast_id = $1`, [id]);
    const bobSale = links(sink.to('bob@clicks.org')[0]!.parsed.html as string)[0]!;
    for (const link of [hrefs[0]!, hrefs[0]!, hrefs[1]!, bobSale]) {
      const res = await web().get(pathOf(link));
      expect(res.status).toBe(302);
    }
    expect((await web().get(pathOf(hrefs[1]!))).headers.location).toBe('https://blog.example/post');
    // (that was ann's second click of the post)

    const perLink = await admin().get(`/admin/api/broadcasts/${id}/links`);
    expect(perLink.body).toEqual({
      ok: true,
      links: [
        { url: 'https://shop.example/sale?a=1&b=2', unique_clicks: 2, clicks: 3, scanner_clicks: 1 },
        { url: 'https://blog.example/post', unique_clicks: 1, clicks: 2, scanner_clicks: 1 },
      ],
    });
    const [rows] = await rawQuery<{ unique: number; people: number; scanners: number; events: number }>(
      db(),
      `SELECT (SELECT count(*)::int FROM link_clicks WHERE broadcast_id = $1 AND NOT scanner) AS unique,
              (SELECT sum(count)::int FROM link_clicks WHERE broadcast_id = $1 AND NOT scanner) AS people,
              (SELECT sum(count)::int FROM link_clicks WHERE broadcast_id = $1 AND scanner) AS scanners,
              (SELECT count(*)::int FROM events WHERE account_id = $2 AND type = 'message.clicked') AS events`,
      [id, t.account.id],
    );
    // unique clicks (an email and a link): ann's sale and post, bob's sale; every person's request is kept in the rows
    expect(rows).toEqual({ unique: 3, people: 5, scanners: 2, events: 3 });
    expect(await statsToday({ broadcast: id })).toMatchObject({ sent: 3, delivered: 3, clicked: rows!.unique });
    const [event] = await rawQuery<{ data: Record<string, unknown> }>(db(), `SELECT data FROM events WHERE account_id = $1 AND type = 'message.clicked' LIMIT 1`, [t.account.id]);
    expect(event!.data).toMatchObject({ url: expect.stringMatching(/^https:\/\//), broadcast: id, to: expect.stringMatching(/@clicks\.org$/) });

    // opens: the image, counted once per email however often it loads
    const pixel = ann.match(/src="(http:\/\/mail\.test\/o\/[^"]+)"/)![1]!;
    for (let i = 0; i < 3; i++) {
      const res = await web().get(pathOf(pixel));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/gif');
      expect(res.headers['cache-control']).toMatch(/no-store/);
    }
    const bobPixel = (sink.to('bob@clicks.org')[0]!.parsed.html as string).match(/src="(http:\/\/mail\.test\/o\/[^"]+)"/)![1]!;
    await web().get(pathOf(bobPixel));
    const opens = await rawQuery<{ n: number; loads: number }>(db(), `SELECT count(*)::int AS n, sum(count)::int AS loads FROM message_opens o JOIN messages m ON m.id = o.message_id WHERE m.broadcast_id = $1`, [id]);
    expect(opens[0]).toEqual({ n: 2, loads: 4 });
    expect(await statsToday({ broadcast: id })).toMatchObject({ opened: 2 });
    const openEvents = await rawQuery<{ n: number }>(db(), `SELECT count(*)::int AS n FROM events WHERE account_id = $1 AND type = 'message.opened'`, [t.account.id]);
    expect(openEvents[0]!.n).toBe(2);
  });

  it('redirects a replayed click token every time and counts it once: one email sent, one click', async () => {
    const t = await broadcastTenant(sink.url);
    await addSubscriber(t.listId, 'replay@clicks.org');
    const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'r', html: '<a href="https://replay.example/">Go</a>', track_clicks: true });
    const id = created.body.broadcast.id as number;
    await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' });
    await waitStatus(id, 'sent');
    await rawQuery(db(), `UPDATE messages SET sent_at = now() - interval '1 minute' WHERE broadcast_id = $1`, [id]);
    const link = links(sink.to('replay@clicks.org')[0]!.parsed.html as string)[0]!;
    const answers = await Promise.all(Array.from({ length: 50 }, () => web().get(pathOf(link))));
    for (const res of answers) expect({ status: res.status, location: res.headers.location }).toEqual({ status: 302, location: 'https://replay.example/' });
    expect(await statsToday({ broadcast: id })).toMatchObject({ sent: 1, clicked: 1 });
    const events = await rawQuery<{ n: number }>(db(), `SELECT count(*)::int AS n FROM events WHERE account_id = $1 AND type = 'message.clicked'`, [t.account.id]);
    expect(events[0]!.n).toBe(1);
    expect((await admin().get(`/admin/api/broadcasts/${id}/links`)).body.links).toEqual([{ url: 'https://replay.example/', unique_clicks: 1, clicks: 50, scanner_clicks: 0 }]);
    expect(await db().linkClick.count({ where: { broadcastId: id } })).toBe(1);
  });

  it('answers 404 without redirecting for a forged, altered or made-up token, and records nothing', async () => {
    const t = await broadcastTenant(sink.url);
    const person = await addSubscriber(t.listId, 'dan@clicks.org');
    const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'x', html: '<a href="https://good.example/">Go</a>', track_clicks: true });
    await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
    await waitStatus(created.body.broadcast.id, 'sent');
    const message = await db().message.findFirstOrThrow({ where: { subscriberId: person.id } });
    const good = clickToken(message.id, 'https://good.example/');
    const [idPart, urlPart, sig] = good.split('.') as [string, string, string];
    const evil = Buffer.from('https://evil.example/').toString('base64url');
    const flipped = sig.slice(0, -1) + (sig.endsWith('A') ? 'B' : 'A');
    const otherMessage = clickToken('00000000-0000-4000-8000-000000000000', 'https://good.example/').split('.')[0]!;
    for (const token of [
      `${idPart}.${evil}.${sig}`, // another address under the same signature: the open redirect it must never be
      `${idPart}.${urlPart}.${flipped}`,
      `${otherMessage}.${urlPart}.${sig}`,
      `${idPart}.${urlPart}`,
      `${idPart}.${Buffer.from('javascript:alert(1)').toString('base64url')}.${sig}`,
      'nonsense',
      `${idPart}.${urlPart}.${sig}.extra`,
    ]) {
      const res = await web().get(`/c/${token}`);
      expect(res.status).toBe(404);
      expect(res.headers.location).toBeUndefined();
      expect(res.text).toContain('Page not found');
    }
    expect((await web().head(`/c/${idPart}.${evil}.${sig}`)).status).toBe(404);
    expect((await web().get(`/o/${openToken(message.id).slice(0, -2)}xx.gif`)).status).toBe(404);
    expect(await db().linkClick.count({ where: { messageId: message.id } })).toBe(0);
    // the genuine token works
    const res = await web().get(`/c/${good}`);
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('https://good.example/');
  });

  it('leaves a broadcast without tracking as written', async () => {
    const t = await broadcastTenant(sink.url);
    await addSubscriber(t.listId, 'eve@clicks.org');
    const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: 'plain', html: '<a href="https://plain.example/">Go</a>' });
    expect(created.body.broadcast).toMatchObject({ track_clicks: false, track_opens: false });
    await admin().patch(`/admin/api/broadcasts/${created.body.broadcast.id}`).send({ status: 'sending' });
    await waitFor(() => sink.to('eve@clicks.org').length === 1);
    expect(links(sink.to('eve@clicks.org')[0]!.parsed.html as string)).toEqual(['https://plain.example/']);
    expect(sink.to('eve@clicks.org')[0]!.parsed.html).not.toContain('/o/');
  });

  it("tracks the links of a campaign's (text) emails when the campaign asks for it", async () => {
    const tenant = await makeTenant({ smtp: sink.url });
    const created = await admin()
      .post('/admin/api/campaigns')
      .send({ account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'Tracked', goal: 'sales', track_clicks: true, steps: [{ subject: 'Hi', body: 'See https://offer.example/deal for {{name}}', delay_hours: 0 }] });
    expect(created.status).toBe(201);
    expect(created.body.campaign.track_clicks).toBe(true);
    await db().campaign.update({ where: { id: created.body.campaign.id }, data: { status: 'running' } });
    const prospect = await db().prospect.create({ data: { campaignId: created.body.campaign.id, email: 'lead@offers.org', name: 'Lee', status: 'ready', nextAt: new Date() } });
    const outcome = await runSequenceStep(db(), prospect.id, 1);
    expect(outcome.kind).not.toBe('skipped');
    const message = await db().message.findFirstOrThrow({ where: { prospectId: prospect.id } });
    const link = message.text!.match(/http:\/\/mail\.test\/c\/(\S+)/)![1]!;
    expect(readClickToken(link)).toEqual({ messageId: message.id, url: 'https://offer.example/deal' });
    expect(message.text).toMatch(/ for Lee$/);
    // and it can be turned off again
    const off = await admin().patch(`/admin/api/campaigns/${created.body.campaign.id}`).send({ track_clicks: false });
    expect(off.body.campaign.track_clicks).toBe(false);
  });

  describe('a merged field never becomes a tracked link', () => {
    const EVIL = 'https://evil.example/phish';
    /** Every tracked link of a body, as the addresses they redirect to. */
    const trackedTargets = (body: string) => [...body.matchAll(/http:\/\/mail\.test\/c\/([A-Za-z0-9_.-]+[A-Za-z0-9_-])/g)].map((m) => readClickToken(m[1]!)?.url);

    it('in a broadcast: a stranger\'s name typed as a URL stays text (escaped in html) and redirects nowhere', async () => {
      const t = await broadcastTenant(sink.url);
      await addSubscriber(t.listId, 'stranger@clicks.org', { name: EVIL, fields: { site: `<a href="${EVIL}">win</a>` } });
      const created = await admin()
        .post('/admin/api/broadcasts')
        .send({
          list: t.list.key,
          subject: 'Hello {{name}}',
          html: '<p>Hi {{name}} ({{fields.site}})</p><p><a href="https://shop.example/">Shop</a></p>',
          text: 'Hi {{name}} ({{fields.site}}), see https://shop.example/',
          track_clicks: true,
        });
      const id = created.body.broadcast.id as number;
      await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' });
      await waitStatus(id, 'sent');
      const mail = sink.to('stranger@clicks.org')[0]!;
      const html = mail.parsed.html as string;
      const text = mail.parsed.text as string;
      // the template's own link is tracked; the merged values are not links at all
      expect(trackedTargets(html)).toEqual(['https://shop.example/']);
      expect(trackedTargets(text)).toEqual(['https://shop.example/']);
      expect(links(html)).toHaveLength(1);
      expect(html).toContain(`Hi ${EVIL} (&lt;a href=&quot;${EVIL}&quot;&gt;win&lt;/a&gt;)`);
      expect(text).toContain(`Hi ${EVIL} (<a href="${EVIL}">win</a>), see http://mail.test/c/`);
      // and no link of the email answers with the stranger's address
      for (const link of [...links(html), ...text.match(/http:\/\/mail\.test\/c\/\S+/g)!]) {
        expect((await web().get(pathOf(link))).headers.location).toBe('https://shop.example/');
      }
    });

    it("in a campaign's step: a prospect's name or field typed as a URL stays text", async () => {
      const tenant = await makeTenant({ smtp: sink.url });
      const created = await admin()
        .post('/admin/api/campaigns')
        .send({ account: tenant.account.id, mailbox: tenant.mailbox.id, name: 'Merged', goal: 'sales', track_clicks: true, steps: [{ subject: 'Hi {{name}}', body: 'Hi {{name}}, from {{fields.company}}: see https://offer.example/deal', delay_hours: 0 }] });
      await db().campaign.update({ where: { id: created.body.campaign.id }, data: { status: 'running' } });
      const prospect = await db().prospect.create({
        data: { campaignId: created.body.campaign.id, email: 'lead@merged.org', name: EVIL, fields: { company: 'http://evil.example/two' }, status: 'ready', nextAt: new Date() },
      });
      expect((await runSequenceStep(db(), prospect.id, 1)).kind).toBe('written');
      const message = await db().message.findFirstOrThrow({ where: { prospectId: prospect.id } });
      expect(trackedTargets(message.text!)).toEqual(['https://offer.example/deal']);
      expect(message.text).toMatch(new RegExp(`^Hi ${EVIL}, from http://evil\\.example/two: see http://mail\\.test/c/\\S+$`));
    });
  });

  it('rewrites http(s) links of html and text bodies, and leaves the service own links and placeholders', () => {
    const id = '11111111-2222-4333-8444-555555555555';
    const html = trackHtmlLinks('<a href="https://x.example/a">A</a><a href="http://mail.test/u/1.abc">U</a><a href="{{unsubscribe_url}}">L</a><a href="ftp://f.example/">F</a>', id);
    expect(links(html)).toEqual([`http://mail.test/c/${clickToken(id, 'https://x.example/a')}`, 'http://mail.test/u/1.abc', '{{unsubscribe_url}}', 'ftp://f.example/']);
    expect(trackTextLinks('See https://x.example/a, or (https://y.example/b). Thanks', id)).toBe(
      `See http://mail.test/c/${clickToken(id, 'https://x.example/a')}, or (http://mail.test/c/${clickToken(id, 'https://y.example/b')}). Thanks`,
    );
  });
});
