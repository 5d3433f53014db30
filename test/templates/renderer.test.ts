import { compileEmail, contentSlots, renderEmail, withLayout } from '../../apps/core/src/templates/content';
import { parse, renderSource, TemplateError, TEMPLATE_LIMITS } from '../../apps/core/src/templates/engine';

/** The one renderer (docs/templates.md), without HTTP: escaping, layouts, the text part, inlined CSS and the limits. */
const refusal = (run: () => unknown): TemplateError => {
  try {
    run();
  } catch (err) {
    if (err instanceof TemplateError) return err;
    throw err;
  }
  throw new Error('expected a TemplateError');
};

describe('the one renderer', () => {
  it('escapes values in html parts, writes them as they are in text parts and subjects; | raw opts out', () => {
    const vars = { name: '<b>Tom</b> & "Jerry"' };
    expect(renderSource('<p>{{ name }}</p>', vars, 'html')).toBe('<p>&lt;b&gt;Tom&lt;/b&gt; &amp; &quot;Jerry&quot;</p>');
    expect(renderSource('<p>{{ name | raw }}</p>', vars, 'html')).toBe('<p><b>Tom</b> & "Jerry"</p>');
    expect(renderSource('Hi {{ name }}', vars, 'text')).toBe('Hi <b>Tom</b> & "Jerry"');
    const email = renderEmail(compileEmail({ subject: 'For {{ name }}\r\nBcc: x@y.z', html: '<p>{{ name }}</p>', text: null }, { textFromHtml: true }), vars);
    expect(email.subject).toBe('For <b>Tom</b> & "Jerry" Bcc: x@y.z');
  });

  it('escapes once in html: | escape, | escape_once and a {% capture %} block are not escaped again', () => {
    const vars = { name: '<b>Tom</b> & "Jerry"', shown: 'a &lt; b' };
    const once = '&lt;b&gt;Tom&lt;/b&gt; &amp; &quot;Jerry&quot;';
    expect(renderSource('<p>{{ name | escape }}</p>', vars, 'html')).toBe(`<p>${once}</p>`);
    expect(renderSource('<p>{{ shown | escape_once }}</p>', vars, 'html')).toBe('<p>a &lt; b</p>');
    // the captured markup stays markup, its values escaped once
    const captured = '{% capture card %}<b>{{ name }}</b>{% endcapture %}<div>{{ card }}</div>';
    expect(renderSource(captured, vars, 'html')).toBe(`<div><b>${once}</b></div>`);
    expect(renderSource('{% capture card %}<i>{{ name | escape }}</i>{% endcapture %}{% if card != "" %}{{ card }}{% endif %}', vars, 'html')).toBe(`<i>${once}</i>`);
    // a filter after it reads the text: its answer is a value, escaped as any value is
    expect(renderSource('{% capture c %}<b>x</b>{% endcapture %}{{ c | upcase }}', {}, 'html')).toBe('&lt;B&gt;X&lt;/B&gt;');
    // text parts and subjects: capture and escape as Liquid has them
    expect(renderSource('{% capture c %}<b>{{ name }}</b>{% endcapture %}{{ c }}', vars, 'text')).toBe('<b><b>Tom</b> & "Jerry"</b>');
    expect(renderSource('{{ name | escape }}', vars, 'text')).toBe('&lt;b&gt;Tom&lt;/b&gt; &amp; &#34;Jerry&#34;');
  });

  it('renders missing values, objects and prototype names empty; loops, conditions and filters work', () => {
    expect(renderSource('[{{ nope }}][{{ fields }}][{{ fields.toString }}][{{ fields.__proto__ }}]', { fields: { a: 1 } }, 'text')).toBe('[][][][]');
    expect(renderSource('{% for i in items %}{{ i | upcase }}{% unless forloop.last %}, {% endunless %}{% endfor %}{% if vip %}!{% endif %}', { items: ['a', 'b'], vip: true }, 'text')).toBe('A, B!');
  });

  it('refuses what does not parse, naming the line; unknown filters and file tags are syntax errors', () => {
    expect(refusal(() => parse('line one\nline two {% if %}', 'html'))).toMatchObject({ kind: 'syntax', line: 2 });
    expect(refusal(() => parse('a\nb\n{{ x | no_such_filter }}', 'text'))).toMatchObject({ kind: 'syntax', line: 3 });
    for (const tag of ['include', 'render', 'layout']) expect(refusal(() => parse(`{% ${tag} 'x' %}`, 'html')).kind).toBe('syntax');
  });

  it('stops a loop that would run forever, a range too large and an output too large', () => {
    const started = Date.now();
    const forever = refusal(() => renderSource('{% for a in (1..100000) %}{% for b in (1..100000) %}{% for c in (1..100000) %}x{% endfor %}{% endfor %}{% endfor %}', {}, 'text'));
    expect(forever.kind).toBe('limit');
    expect(Date.now() - started).toBeLessThan(TEMPLATE_LIMITS.renderMs * 8);
    expect(refusal(() => renderSource('{% for i in (1..1000000000) %}x{% endfor %}', {}, 'text')).kind).toBe('limit');
    // 50 MB asked for: 5,000 x 10 KB
    const big = refusal(() => renderSource(`{% for i in (1..5000) %}${'x'.repeat(10_000)}{% endfor %}`, {}, 'html'));
    expect(big.kind).toBe('limit');
    expect(big.message).toMatch(/more than/);
  });

  it('bounds a render that one filter would take past its time or memory: a long sort, nested expressions, a long split, a big capture', () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      // 3 million numbers sorted took 2.7 s and 600 MB in one filter call, past the 250 ms cap
      ['{% assign a = (1..n) | sort %}x', { n: 3_000_000 }, /a range or value of more than 1000000 items/],
      ['{% assign a = (1..n) | sort %}x', { n: 500_000 }, /a list of more than 10000 items \(sort\)/],
      ['{% assign a = s | split: "" %}x', { s: 'y'.repeat(100_000) }, /a list of more than 10000 items \(split\)/],
      // 5,000 sorts of 5,000 numbers inside one group_by_exp: the clock is read at each inner filter call (on a fast host
      // the ranges' allocation bound may come first: either bound stops it)
      ['{% assign a = (1..5000) | group_by_exp: "i", "(1..5000) | sort | size" %}x', {}, /render limit|characters allocated by ranges and filters/],
      [`{% assign a = (1..10) | where_exp: "i", "${'i > 0 and '.repeat(60)}i > 0" %}x`, {}, /an expression of more than 500 characters \(where_exp\)/],
      ['{% capture c %}{% for i in (1..100000) %}{{ s }}{% endfor %}{% endcapture %}{{ c | size }}', { s: 'y'.repeat(100_000) }, /more than 2097152 characters/],
    ];
    for (const [source, variables, words] of cases) {
      const started = Date.now();
      const err = refusal(() => renderSource(source, variables, 'text'));
      expect({ source, kind: err.kind, message: err.message }).toEqual({ source, kind: 'limit', message: expect.stringMatching(words) });
      // the render's cap, with room for a loaded machine; unbounded these take seconds to minutes
      expect(Date.now() - started).toBeLessThan(TEMPLATE_LIMITS.renderMs * 8);
    }
    // within the caps, the same filters work
    expect(renderSource('{{ (1..3) | sort | reverse | join: "," }}{% capture c %}{{ "ab" | split: "" | size }}{% endcapture %}{{ c }}', {}, 'text')).toBe('3,2,12');
  });

  it('refuses a literal range past its cap when the source is parsed, so when it is stored', () => {
    expect(refusal(() => parse('{% for i in (1..3000000) | sort %}{% endfor %}', 'html'))).toMatchObject({ kind: 'limit', message: expect.stringMatching(/a range of more than 1000000 items/) });
    // text outside Liquid markup is not a range
    expect(parse('<p>(1..3000000)</p>', 'html')).toHaveLength(1);
  });

  it('puts a template into its layout at {{ content }}, inlines <style> and makes the text part from the html', () => {
    const layout = '<html><head><style>p { color: #123456 }</style></head><body><div class="wrap">{{ content }}</div><p>{{ footer }}</p></body></html>';
    expect(contentSlots(layout)).toHaveLength(1);
    expect(contentSlots('<p>{{ contents }}</p>')).toEqual([]);
    const compiled = compileEmail({ subject: 'Hi {{ name }}', html: '<p>Hello {{ name }}</p>{% if vip %}<p>VIP</p>{% endif %}<a href="{{ url }}">read</a>', text: null }, { layoutHtml: layout, inlineCss: true, textFromHtml: true });
    const email = renderEmail(compiled, { name: 'Ann', vip: true, url: 'https://example.org/a?b=1&c=2', footer: 'Bye' });
    expect(email.html).toContain('<p style="color: #123456;">Hello Ann</p><p style="color: #123456;">VIP</p>');
    expect(email.html).toContain('href="https://example.org/a?b=1&amp;c=2"');
    expect(email.html).not.toContain('<style>');
    expect(email.text).toBe('Hello Ann\n\nVIP\n\nread (https://example.org/a?b=1&c=2)\n\nBye');
    expect(() => withLayout('<p>no slot</p>', '<p>x</p>')).toThrow(/content/);
  });
});
