import { loadConfig } from '../../apps/core/src/config';
import { db } from '../../apps/core/src/db';
import { isPublicAddress } from '../../apps/core/src/outbound/guard';
import { checkProspectLink, defaultFetchLimits } from '../../apps/core/src/outreach/link-check';
import { FETCH_LIMITS, NOT_REACHABLE } from '../../apps/core/src/links/fetch';
import { findLink, pointsTo } from '../../apps/core/src/links/find';
import { agreedProspect, prospectRow, usePages } from './support';

// the pages are served on 127.0.0.1: these tests allow private fetches; the refusal tests below pass limits without
process.env.ALLOW_PRIVATE_FETCH = 'true';

const pages = usePages();
const TARGET = 'http://target.example/blog/';
let n = 0;
const path = (name: string) => `/${name}-${n++}`;

/** A page at a fresh path with `body`, and an agreed prospect of a campaign targeting `target` that gave it. */
async function pageWith(body: string, target = TARGET) {
  const at = path('page');
  pages.html(at, `<!doctype html><html><body><p>Hello</p>${body}</body></html>`);
  return agreedProspect(target, pages.url(at));
}

describe('the link check finds the target link (docs/links.md)', () => {
  it.each([
    ['https and www.', 'https://www.target.example/blog'],
    ['no trailing slash', 'http://target.example/blog'],
    ['a deeper path, query and fragment', 'https://target.example/blog/2026/post?utm=x#top'],
    ['upper-case scheme and host, trailing slash', 'HTTP://WWW.Target.Example/blog/'],
  ])('places the prospect for an href with %s, with its anchor and rel', async (_what, href) => {
    const { id } = await pageWith(`<a href="${href}">Great   <em>blog</em></a>`);
    expect(await checkProspectLink(db(), id)).toBe('placed');
    const row = await prospectRow(id);
    expect(row).toMatchObject({ status: 'placed', reason: '', linkFound: true, linkHref: new URL(href).href, linkAnchor: 'Great blog', linkRel: '', linkError: '' });
    expect(row.linkCheckedAt).toBeInstanceOf(Date);
  });

  it('records rel nofollow (lower-cased) and an image link\'s alt text as the anchor', async () => {
    const { id } = await pageWith('<a rel="NoFollow  UGC" href="http://target.example/blog/x"><img src="b.png" alt="Target blog"></a>');
    expect(await checkProspectLink(db(), id)).toBe('placed');
    expect(await prospectRow(id)).toMatchObject({ status: 'placed', linkRel: 'nofollow ugc', linkAnchor: 'Target blog' });
  });

  it('follows relative redirects and resolves relative hrefs against the final URL', async () => {
    const start = path('start');
    pages.redirect(start, 'hop', 301); // relative to /: /hop
    pages.redirect('/hop', '/a/b/page', 307);
    pages.html('/a/b/page', '<a href="../../shop/item" rel="sponsored">Our <b>shop</b></a>');
    const { id } = await agreedProspect(pages.url('/shop'), pages.url(start));
    expect(await checkProspectLink(db(), id)).toBe('placed');
    expect(await prospectRow(id)).toMatchObject({ status: 'placed', linkHref: pages.url('/shop/item'), linkAnchor: 'Our shop', linkRel: 'sponsored' });
  });

  it('follows 5 redirects but not 6: the error is kept and the prospect stays agreed', async () => {
    const chain = (label: string, hops: number) => {
      pages.html(`/${label}-0`, '<a href="http://target.example/blog/">blog</a>');
      for (let i = 1; i <= hops; i++) pages.redirect(`/${label}-${i}`, `/${label}-${i - 1}`);
      return pages.url(`/${label}-${hops}`);
    };
    const five = await agreedProspect(TARGET, chain('five', 5));
    expect(await checkProspectLink(db(), five.id)).toBe('placed');
    const six = await agreedProspect(TARGET, chain('six', 6));
    expect(await checkProspectLink(db(), six.id)).toBe('missing');
    const row = await prospectRow(six.id);
    expect(row).toMatchObject({ status: 'agreed', linkFound: false, linkError: 'more than 5 redirects' });
    expect(row.linkCheckedAt).toBeInstanceOf(Date);
  });
});

describe('the link check does not place the prospect', () => {
  it('when the page has no link to the target (other hosts, a longer segment, mailto)', async () => {
    const { id } = await pageWith(`
      <a href="http://target.example/blogger">not a segment</a>
      <a href="http://target.example.evil.test/blog/">other host</a>
      <a href="http://other.example/blog/">other site</a>
      <a href="mailto:blog@target.example">mail</a>
      <a>no href</a>`);
    expect(await checkProspectLink(db(), id)).toBe('missing');
    const row = await prospectRow(id);
    expect(row).toMatchObject({ status: 'agreed', linkFound: false, linkHref: '', linkError: `no link to ${TARGET} on the page` });
    expect(row.linkCheckedAt).toBeInstanceOf(Date);
  });

  it('when the page does not answer in time (the fetch deadline, shortened here)', async () => {
    const at = path('slow');
    pages.hang(at);
    const { id } = await agreedProspect(TARGET, pages.url(at));
    const started = Date.now();
    expect(await checkProspectLink(db(), id, { ...defaultFetchLimits(), timeoutMs: 400 })).toBe('missing');
    expect(Date.now() - started).toBeLessThan(8_000);
    const row = await prospectRow(id);
    // a timeout reads as any other way of not reaching the page: the checker tells no network detail
    expect(row).toMatchObject({ status: 'agreed', linkError: NOT_REACHABLE });
    expect(row.linkCheckedAt).toBeInstanceOf(Date);
    expect(FETCH_LIMITS.timeoutMs).toBe(10_000);
  });

  it.each([
    ['announced by Content-Length', true],
    ['streamed without a length', false],
  ])('when the page is over 2 MB (%s), even with the link at its top', async (_how, announce) => {
    const at = path('big');
    const head = '<a href="http://target.example/blog/">blog</a>';
    const filler = Buffer.alloc(64 * 1024, 'x');
    pages.pages.set(at, (_req, res) => {
      const total = FETCH_LIMITS.maxBytes + 1;
      res.writeHead(200, { 'content-type': 'text/html', ...(announce ? { 'content-length': String(total) } : {}) });
      res.write(head);
      let sent = head.length;
      const more = () => {
        while (sent < total) {
          const chunk = filler.subarray(0, Math.min(filler.length, total - sent));
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    });
    const { id } = await agreedProspect(TARGET, pages.url(at));
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect(await prospectRow(id)).toMatchObject({ status: 'agreed', linkFound: false, linkError: `the page is over ${FETCH_LIMITS.maxBytes} bytes` });
  });

  it('when the page answers an HTTP error', async () => {
    const { id } = await agreedProspect(TARGET, pages.url('/nowhere'));
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect(await prospectRow(id)).toMatchObject({ status: 'agreed', linkError: 'the page answered HTTP 404' });
  });
});

describe('a placed link that goes away', () => {
  it('stays placed after one failed check and moves back to agreed (link_removed) after the second, with events', async () => {
    const at = path('removed');
    pages.html(at, '<a href="http://target.example/blog/">blog</a>');
    const { id, tenant } = await agreedProspect(TARGET, pages.url(at));
    expect(await checkProspectLink(db(), id)).toBe('placed');
    pages.html(at, '<p>the link is gone</p>');
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect(await prospectRow(id)).toMatchObject({ status: 'placed', linkMisses: 1, linkFound: false });
    expect(await checkProspectLink(db(), id)).toBe('lost');
    expect(await prospectRow(id)).toMatchObject({ status: 'agreed', reason: 'link_removed', linkMisses: 0, linkFound: false, linkHref: 'http://target.example/blog/' });
    const events = await db().event.findMany({ where: { accountId: tenant.account.id }, orderBy: { createdAt: 'asc' } });
    expect(events.map((e) => [e.type, (e.data as { status: string; previous?: string }).status, (e.data as { previous?: string }).previous])).toEqual([
      ['prospect.state_changed', 'agreed', 'new'],
      ['link.placed', 'placed', undefined],
      ['prospect.state_changed', 'placed', 'agreed'],
      ['link.lost', 'agreed', undefined],
      ['prospect.state_changed', 'agreed', 'placed'],
    ]);
  });

  it('a link back between two failed checks resets the count', async () => {
    const at = path('flaky');
    const linked = '<a href="http://target.example/blog/">blog</a>';
    pages.html(at, linked);
    const { id } = await agreedProspect(TARGET, pages.url(at));
    await checkProspectLink(db(), id);
    pages.html(at, '<p>gone</p>');
    expect(await checkProspectLink(db(), id)).toBe('missing');
    pages.html(at, linked);
    expect(await checkProspectLink(db(), id)).toBe('found');
    pages.html(at, '<p>gone</p>');
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect(await prospectRow(id)).toMatchObject({ status: 'placed', linkMisses: 1 });
  });
});

describe('private addresses are refused when ALLOW_PRIVATE_FETCH is off', () => {
  const closed = () => ({ ...defaultFetchLimits(), allowPrivate: false });

  /** loadConfig() with one variable changed for the call */
  const configWith = (name: string, value: string | undefined) => {
    const saved = process.env[name];
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
    try {
      return loadConfig();
    } finally {
      if (saved === undefined) delete process.env[name];
      else process.env[name] = saved;
    }
  };

  it('is off unless set', () => expect(configWith('ALLOW_PRIVATE_FETCH', undefined).allowPrivateFetch).toBe(false));

  it.each([
    ['ALLOW_PRIVATE_FETCH', 'maybe', /ALLOW_PRIVATE_FETCH must be true or false/],
    ['LINK_RECHECK_HOURS', '0', /LINK_RECHECK_HOURS must be a number above 0/],
    ['LINK_RECHECK_HOURS', 'soon', /LINK_RECHECK_HOURS must be a number above 0/],
  ])('refuses to start with %s=%s', (name, value, error) => expect(() => configWith(name, value)).toThrow(error));

  it('reads a fractional LINK_RECHECK_HOURS', () => expect(configWith('LINK_RECHECK_HOURS', '0.001').linkRecheckHours).toBe(0.001));

  it.each([
    ['127.0.0.1', (port: number) => `http://127.0.0.1:${port}/open`, NOT_REACHABLE],
    ['a name resolving to loopback (localhost)', (port: number) => `http://localhost:${port}/open`, NOT_REACHABLE],
    ['10.x', () => 'http://10.20.30.40/open', NOT_REACHABLE],
    ['IPv6 loopback', (port: number) => `http://[::1]:${port}/open`, NOT_REACHABLE],
    ['a documentation address (192.0.2.1)', () => 'http://192.0.2.1/open', NOT_REACHABLE],
    ['NAT64 of loopback (64:ff9b::7f00:1)', (port: number) => `http://[64:ff9b::7f00:1]:${port}/open`, NOT_REACHABLE],
    ['IPv4-mapped loopback (::ffff:127.0.0.1)', (port: number) => `http://[::ffff:127.0.0.1]:${port}/open`, NOT_REACHABLE],
  ])('refuses %s without fetching it', async (_what, url, error) => {
    pages.html('/open', '<a href="http://target.example/blog/">blog</a>');
    const { id } = await agreedProspect(TARGET, url(pages.port));
    expect(await checkProspectLink(db(), id, closed())).toBe('missing');
    const row = await prospectRow(id);
    expect(row.status).toBe('agreed');
    expect(row.linkError).toBe(error);
    // and nothing of the page reached the prospect's row
    expect(row.linkAnchor).toBe('');
    expect(row.linkCheckedAt).toBeInstanceOf(Date);
  });

  it('checks every redirect hop again (a hop to another scheme is refused like a first URL)', async () => {
    // the hop goes through the same per-hop checks (scheme here; a private address: below)
    const at = path('to-ftp');
    pages.redirect(at, 'ftp://files.example/page');
    const { id } = await agreedProspect(TARGET, pages.url(at));
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect((await prospectRow(id)).linkError).toBe('only http and https pages are fetched, not ftp:');
  });

  it('fetches the same page by name when allowed (the refusal above is the guard, not the name)', async () => {
    pages.html('/open', '<a href="http://target.example/blog/">blog</a>');
    const { id } = await agreedProspect(TARGET, `http://localhost:${pages.port}/open`);
    expect(await checkProspectLink(db(), id)).toBe('placed');
  });

  it('refuses schemes other than http and https', async () => {
    const { id } = await agreedProspect(TARGET, 'http://127.0.0.1:1/x');
    await db().prospect.update({ where: { id }, data: { linkUrl: 'ftp://files.example/x' } });
    expect(await checkProspectLink(db(), id)).toBe('missing');
    expect((await prospectRow(id)).linkError).toBe('only http and https pages are fetched, not ftp:');
  });

  it.each([
    '127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '255.255.255.255',
    '192.0.2.1', '198.51.100.7', '203.0.113.9', '192.88.99.1', '198.18.0.1', '224.0.0.1',
    '::', '::1', 'fe80::1', 'fd00::1', '2001:db8::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::7f00:1',
    '64:ff9b::10.0.0.1', '64:ff9b:1::a00:1', '2002:7f00:1::1', '2001::1',
    // IPv4-translated (::ffff:0:0:0/96) whatever it carries, local-use NAT64 and the rest of 64:ff9b::/32, and any other
    // IPv6 address outside global unicast (2000::/3)
    '::ffff:0:7f00:1', '::ffff:0:127.0.0.1', '::ffff:0:10.0.0.1', '::ffff:0:8.8.8.8', '64:ff9b:1::8.8.8.8', '64:ff9b::1:0:a00:1',
    '64:ff9b:0:0:1::7f00:1', '100::1', '4000::1', 'e000::1',
  ])('counts %s as not public', (address) => expect(isPublicAddress(address)).toBe(false));
  it.each(['93.184.216.34', '8.8.8.8', '2606:4700::1111', '64:ff9b::8.8.8.8', '2002:808:808::1', '::ffff:8.8.8.8'])('counts %s as public', (address) =>
    expect(isPublicAddress(address)).toBe(true),
  );
  it("counts the host's own interface addresses as not public, whatever their range", () => {
    expect(isPublicAddress('93.184.216.34', new Set(['93.184.216.34']))).toBe(false);
    expect(isPublicAddress('2606:4700::1111', new Set(['2606:4700::1111']))).toBe(false);
  });

  it('checks every hop: a public first page (here: the test server, allowed by its exact address) redirecting to a private one is refused', async () => {
    const at = path('to-private');
    pages.redirect(at, 'http://192.168.7.7/admin');
    const { id } = await agreedProspect(TARGET, pages.url(at));
    const allowOnlyTheTestServer = { ...defaultFetchLimits(), allowPrivate: false, allow: ['127.0.0.1'] };
    expect(await checkProspectLink(db(), id, allowOnlyTheTestServer)).toBe('missing');
    expect((await prospectRow(id)).linkError).toBe(NOT_REACHABLE);
    // the refusal is the guard's: the same page without the redirect is fetched under the same policy
    pages.html('/open', '<a href="http://target.example/blog/">blog</a>');
    const direct = await agreedProspect(TARGET, pages.url('/open'));
    expect(await checkProspectLink(db(), direct.id, allowOnlyTheTestServer)).toBe('placed');
  });
});

describe('matching hrefs to the target', () => {
  const t = new URL('https://www.target.example/blog');
  it.each([
    ['http://target.example/blog', true],
    ['https://target.example/blog/', true],
    ['https://target.example/blog/a/b', true],
    ['https://target.example/', false],
    ['https://target.example/blogs', false],
    ['https://sub.target.example/blog', false],
    ['https://target.example:8443/blog', false],
  ])('%s -> %s', (href, expected) => expect(pointsTo(new URL(href), t)).toBe(expected));

  it('resolves relative hrefs against <base href>', () => {
    const html = '<head><base href="https://target.example/blog/"></head><a href="post">post</a>';
    expect(findLink(html, 'https://elsewhere.example/page', 'https://target.example/blog')).toEqual({ href: 'https://target.example/blog/post', anchor: 'post', rel: '' });
  });

  it('prefers a followed link over a nofollow one', () => {
    const html = '<a rel="nofollow" href="https://target.example/blog">one</a><a href="https://target.example/blog">two</a>';
    expect(findLink(html, 'https://x.example/', 'https://target.example/blog')?.anchor).toBe('two');
  });
});
