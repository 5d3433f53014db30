import { normaliseEmail, normaliseSite } from '../../apps/core/src/outreach/contacts';
import { followUpSubject } from '../../apps/core/src/outreach/render';
import { renderSubject, renderTemplate } from '../../apps/core/src/templates/render';
import { noReplyWaitHours } from '../../apps/core/src/outreach/timing';

describe('contact normalisation', () => {
  it.each([
    ['example.com', 'example.com'],
    ['https://www.Example.com/about?x=1#top', 'example.com'],
    ['HTTP://WWW.EXAMPLE.COM', 'example.com'],
    ['//cdn.example.com/x', 'cdn.example.com'],
    ['www.shop.example.co.uk:8443/path', 'shop.example.co.uk'],
    ['user:pw@blog.example.org', 'blog.example.org'],
    ['example.com.', 'example.com'],
    ['bücher.de', 'xn--bcher-kva.de'],
    ['  Example.ORG  ', 'example.org'],
  ])('normalises the site %s to %s', (raw, host) => {
    expect(normaliseSite(raw)).toBe(host);
  });

  it.each(['', '   ', 'localhost', 'not a site', 'http://', 'exa mple.com', 42, null])('refuses %p as a site', (raw) => {
    expect(normaliseSite(raw)).toBeNull();
  });

  it('lower-cases valid addresses and refuses the rest', () => {
    expect(normaliseEmail(' Ann@Example.ORG ')).toBe('ann@example.org');
    for (const bad of ['ann', 'ann@example', 'ann@', '@example.org', 'a b@example.org', '', null, 7]) expect(normaliseEmail(bad)).toBeNull();
  });
});

describe('step templates', () => {
  const ctx = { name: 'Ann', email: 'ann@x.org', site: 'x.org', fields: { company: 'Acme', seats: 12, paid: false, empty: null } };

  it('fills name, email, site and fields; missing or unknown placeholders render empty, never "undefined"', () => {
    expect(renderTemplate('{{name}} <{{ email }}> {{site}} {{fields.company}} {{fields.seats}} {{fields.paid}}', ctx)).toBe('Ann <ann@x.org> x.org Acme 12 false');
    expect(renderTemplate('[{{fields.missing}}][{{fields.empty}}][{{nope}}][{{fields}}][{{name.first}}]', ctx)).toBe('[][][][][]');
    expect(renderTemplate('{{name}}', { ...ctx, site: null, fields: 'garbage' })).toBe('Ann');
    expect(renderTemplate('{{fields.toString}} {{fields.__proto__}}', ctx)).toBe(' ');
    expect(renderTemplate('{{ site }}', { ...ctx, site: null })).toBe('');
  });

  it('puts a subject on one line', () => {
    expect(renderSubject('Hi {{name}}', { ...ctx, name: 'Ann\r\nBcc: x@y.z' })).toBe('Hi Ann Bcc: x@y.z');
  });

  it('gives a follow-up "Re: <first subject>" unless it has a subject of its own', () => {
    expect(followUpSubject('Hello {{name}}', 'Hello {{name}}', ctx)).toBe('Re: Hello Ann');
    expect(followUpSubject('  ', 'Hello {{name}}', ctx)).toBe('Re: Hello Ann');
    expect(followUpSubject('Re: old', 'Re: old', ctx)).toBe('Re: old');
    expect(followUpSubject('Another idea for {{fields.company}}', 'Hello {{name}}', ctx)).toBe('Another idea for Acme');
  });
});

describe('timing', () => {
  it('waits the last step\'s own delay for an answer, or 72 hours when it is 0', () => {
    expect(noReplyWaitHours(48)).toBe(48);
    expect(noReplyWaitHours(0.0005)).toBe(0.0005);
    expect(noReplyWaitHours(0)).toBe(72);
  });
});
