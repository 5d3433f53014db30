import { classify } from '../../apps/core/src/inbound/classify';
import { bounceOfAnswer } from '../../apps/core/src/inbound/bounce-policy';
import { DEAD_KINDS, WORDINGS, wordingReport, type WordingForm } from '../fixtures/wordings/cases';

/**
 * The bounce reader on a corpus of our own making (test/fixtures/wordings): dead addresses in other wordings and
 * languages than sisimai's set (a mailbox that does not exist or is not available with a status that says little, a
 * host that does not exist with no text at all) are suppressed at once; an account disabled, spam, policy, size, a full
 * mailbox, a temporary state, a message expired after its retries and a "user unknown" said after DATA, under a status
 * that says otherwise or naming no address (sisimai's `filtered`) never are.
 */
const NOW = new Date('2026-11-25T00:00:00Z');
const cases = WORDINGS.flatMap((c) => (['dsn', 'text'] as WordingForm[]).filter((form) => form === 'dsn' || c.text).map((form) => ({ ...c, form })));

describe('bounce wordings of our own corpus', () => {
  it('holds every kind in every language it names', () => {
    expect(cases.length).toBeGreaterThanOrEqual(250);
    for (const lang of ['en', 'de', 'fr', 'es', 'pt', 'nl', 'it', 'ja']) {
      for (const kind of ['userunknown', 'disabled', 'spam', 'policy', 'size', 'full'] as const) expect(WORDINGS.some((c) => c.lang === lang && c.kind === kind)).toBe(true);
    }
  });

  it.each(cases.filter((c) => DEAD_KINDS.includes(c.kind)).map((c) => [c.kind, c.lang, c.form, c.status, c.text, c] as const))(
    'dead: %s (%s, %s %s) "%s" is suppressed at once',
    async (_kind, _lang, form, _status, _text, c) => {
      const mail = await classify(Buffer.from(wordingReport(c, form, 'someone@remote.test', 'sales@ours.test', '<m1@ours.test>'), 'utf8'), NOW);
      expect(mail.kind).toBe('bounce');
      const failed = mail.report!.recipients.find((r) => r.address === 'someone@remote.test');
      expect(failed).toMatchObject({ dead: true, permanent: true, reason: c.kind });
    },
  );

  it.each(cases.filter((c) => !DEAD_KINDS.includes(c.kind)).map((c) => [c.kind, c.lang, c.form, c.text, c] as const))(
    'live: %s (%s, %s) "%s" never suppresses at once',
    async (_kind, _lang, form, _text, c) => {
      const mail = await classify(Buffer.from(wordingReport(c, form, 'someone@remote.test', 'sales@ours.test', '<m1@ours.test>'), 'utf8'), NOW);
      expect(mail.kind).toBe('bounce');
      const failed = mail.report!.recipients.find((r) => r.address === 'someone@remote.test')!;
      expect(failed.dead).toBe(false);
      // an account disabled (sisimai's `suspend`), a full mailbox, a passing state, an expiry or sisimai's `filtered`
      // counts toward SOFT_BOUNCE_LIMIT; spam, policy and size never suppress
      expect(mail.report!.reasonClass).toBe(['disabled', 'full', 'temporary', 'expired', 'filtered'].includes(c.kind) ? 'mailbox' : 'not_address');
      if (c.kind === 'disabled') expect(failed.reason).toBe('suspend');
    },
  );

  it('reads the same words in an SMTP answer at delivery (RCPT), but not after DATA', () => {
    expect(bounceOfAnswer('550 Die Empfängeradresse existiert nicht', 'RCPT TO')).toMatchObject({ reason: 'userunknown', class: 'dead', dead: true });
    expect(bounceOfAnswer('550 Ce compte a été désactivé', 'RCPT TO')).toMatchObject({ reason: 'suspend', class: 'mailbox', dead: false });
    expect(bounceOfAnswer('550 Mailbox temporarily disabled', 'RCPT TO')).toMatchObject({ class: 'mailbox', dead: false });
    expect(bounceOfAnswer('550 Benutzer unbekannt', 'DATA')).toMatchObject({ class: 'not_address', dead: false });
  });
});
