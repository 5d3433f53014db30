import { corpusFigures, figuresTable, type Figures } from '../../scripts/corpus-figures';

/**
 * The bounce reader on real reports: sisimai's public corpus (test/fixtures/sisimai, BSD 2-Clause, its LICENSE beside
 * it), each file's expected answer from go-sisimai's tables. The figures are docs/inbound.md's; `npm run corpus` prints them.
 */
describe('bounce corpus (sisimai maildir/bsd)', () => {
  let figures: Figures;
  beforeAll(async () => {
    figures = await corpusFigures();
  }, 120_000);

  it('reads every file with an expected answer', () => {
    expect(figures.overall.files).toBeGreaterThanOrEqual(580);
    expect(figures.overall.dead).toBeGreaterThanOrEqual(180);
    expect(figures.overall.notAddress).toBeGreaterThanOrEqual(190);
    expect(figures.overall.temporary).toBeGreaterThanOrEqual(80);
  });

  it('suppresses at least 95% of the dead addresses (sisimai hard bounces)', () => {
    const o = figures.overall;
    expect(o.deadSuppressed / o.dead).toBeGreaterThanOrEqual(0.95);
  });

  it('suppresses at most 3% of the 5.x.x failures that are not about the address', () => {
    const o = figures.overall;
    expect(o.notAddressSuppressed / o.notAddress).toBeLessThanOrEqual(0.03);
  });

  it('suppresses at once at most 3% of the live addresses (every failure sisimai does not call hard, its filtered and suspend included)', () => {
    // 12 of 411 (2.9%) now: 37 (9.0%) before an account disabled (sisimai's suspend) was read as a mailbox failure and
    // a filtering gateway's bare "user unknown" as sisimai's filtered (docs/inbound.md, "Measured on real reports")
    const o = figures.overall;
    expect(o.live).toBeGreaterThanOrEqual(400);
    expect(o.liveSuppressed / o.live).toBeLessThanOrEqual(0.03);
  });

  it('suppresses at once no 5.x.x failure that is not about the address', () => {
    expect(figures.overall.notAddressSuppressed).toBe(0);
  });

  it('never suppresses on a 4.x.x failure', () => {
    expect(figures.overall.temporarySuppressed).toBe(0);
  });

  it('never reads a report as an auto-reply; every rfc3834 file is one, every arf file a complaint', () => {
    const o = figures.overall;
    expect(o.reportsAsAutoReply).toBe(0);
    expect(o.rfc3834).toBeGreaterThanOrEqual(5);
    expect(o.rfc3834AutoReply).toBe(o.rfc3834);
    expect(o.arf).toBeGreaterThanOrEqual(14);
    expect(o.arfComplaint).toBe(o.arf);
  });

  it('finds the expected recipient', () => {
    const o = figures.overall;
    expect(o.recipientsFound / o.recipients).toBeGreaterThanOrEqual(0.97);
  });

  it('prints a table with a row per family and the overall figures', () => {
    const table = figuresTable(figures);
    expect(table).toMatch(/^\| lhost-exim \| 40 \|/m);
    expect(table).toMatch(/^\| \*\*all\*\* \| \d+ \| \d+\/\d+ \(9\d\.\d%\)/m);
  });
});
