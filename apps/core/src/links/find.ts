import { Parser } from 'htmlparser2';

/** A link on the page that points to the target. */
export interface FoundLink {
  href: string;
  /** the link's text (whitespace collapsed; an image's alt text counts) */
  anchor: string;
  /** the rel attribute, lower-cased: "nofollow", "sponsored ugc", or "" */
  rel: string;
}

const hostOf = (url: URL) => url.host.toLowerCase().replace(/^www\./, '');
const segmentsOf = (url: URL) => url.pathname.split('/').filter(Boolean);

/**
 * Whether `href` points to `target` (docs/links.md): http and https alike, the same host without `www.`, and the target's
 * path as a prefix by whole segments (`/blog` matches `/blog/` and `/blog/post`, not `/blogger`). Query and fragment
 * do not matter.
 */
export function pointsTo(href: URL, target: URL): boolean {
  if (href.protocol !== 'http:' && href.protocol !== 'https:') return false;
  if (hostOf(href) !== hostOf(target)) return false;
  const want = segmentsOf(target);
  const have = segmentsOf(href);
  return want.length <= have.length && want.every((segment, i) => segment === have[i]);
}

function resolve(href: string, base: string): URL | null {
  try {
    return new URL(href.trim(), base);
  } catch {
    return null;
  }
}

/**
 * The links of an HTML page (parsed with htmlparser2, as browsers forgive broken markup) that point to `target`;
 * relative hrefs resolve against `<base href>` when the page has one, else against the page's own final URL.
 * A followed link is preferred over a nofollow one; else the first on the page.
 */
export function findLink(html: string, pageUrl: string, targetUrl: string): FoundLink | null {
  const target = new URL(targetUrl);
  let base = pageUrl;
  const found: FoundLink[] = [];
  let open: { href: string; rel: string; text: string[] } | null = null;

  const parser = new Parser(
    {
      onopentag(name, attrs) {
        if (name === 'base' && attrs.href && found.length === 0 && !open) {
          base = resolve(attrs.href, pageUrl)?.href ?? base;
        } else if (name === 'a') {
          const href = attrs.href !== undefined ? resolve(attrs.href, base) : null;
          open = href && pointsTo(href, target) ? { href: href.href, rel: (attrs.rel ?? '').toLowerCase().split(/\s+/).filter(Boolean).join(' '), text: [] } : null;
        } else if (name === 'img' && open && attrs.alt) {
          open.text.push(` ${attrs.alt} `);
        }
      },
      ontext(text) {
        open?.text.push(text);
      },
      onclosetag(name) {
        if (name !== 'a' || !open) return;
        found.push({ href: open.href, rel: open.rel, anchor: open.text.join('').replace(/\s+/g, ' ').trim() });
        open = null;
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return found.find((link) => !link.rel.split(' ').includes('nofollow')) ?? found[0] ?? null;
}
