import fs from 'node:fs';
import path from 'node:path';
import { classify, findReturnDate } from '../../apps/core/src/inbound/classify';
import { resumeAt } from '../../apps/core/src/inbound/handle';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, 'fixtures', name));
const NOW = new Date('2026-11-23T10:00:00Z');

describe('inbound classifier (fixture emails)', () => {
  it('a DSN with Action failed and Status 5.1.1 is a bounce, with its recipient, original Message-ID and diagnostic', async () => {
    const mail = await classify(fixture('dsn-5.1.1.eml'), NOW);
    expect(mail.kind).toBe('bounce');
    expect(mail.report).toMatchObject({
      recipient: 'nobody@example.org',
      originalId: '<abc-123@ours.test>',
      status: '5.1.1',
      smtpCode: '550',
      reason: 'userunknown',
      reasonClass: 'dead',
      dead: true,
      diagnostic: expect.stringContaining('User unknown in virtual mailbox table'),
    });
  });

  it('an Amazon SES notification names the original by the Message-ID among its original headers', async () => {
    const sisimai = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'sisimai', 'bsd', 'lhost-amazonses-09.eml'), 'latin1');
    expect((await classify(sisimai, NOW)).report).toMatchObject({ recipient: 'bounce@simulator.amazonses.com', originalId: null });
    const withHeaders = sisimai.replace('"commonHeaders":{', '"headers":[{"name":"From","value":"a@ours.test"},{"name":"Message-ID","value":"<abc-9@ours.test>"}],"commonHeaders":{');
    expect((await classify(withHeaders, NOW)).report).toMatchObject({ recipient: 'bounce@simulator.amazonses.com', originalId: '<abc-9@ours.test>', dead: true });
  });

  it('a DSN with 4.x.x / delayed does not act', async () => {
    const mail = await classify(fixture('dsn-4.4.7.eml'), NOW);
    expect(mail.kind).toBe('delayed');
    expect(mail.report!.status).toBe('4.4.7');
  });

  it('an ARF report is a complaint about the original recipient', async () => {
    const mail = await classify(fixture('arf.eml'), NOW);
    expect(mail.kind).toBe('complaint');
    expect(mail.report).toMatchObject({ recipient: 'angry@example.net', originalId: '<def-456@ours.test>' });
  });

  it('auto-replies by header or subject in several languages, with the return date read from the text', async () => {
    const en = await classify(fixture('ooo-en.eml'), NOW);
    expect(en).toMatchObject({ kind: 'auto_reply', threadIds: ['<abc-123@ours.test>'], returnDate: new Date('2026-12-03T00:00:00Z') });
    const de = await classify(fixture('ooo-de.eml'), NOW);
    expect(de).toMatchObject({ kind: 'auto_reply', from: 'max@example.de', returnDate: new Date('2026-12-03T00:00:00Z') });
    const fr = await classify(fixture('ooo-fr.eml'), NOW);
    expect(fr).toMatchObject({ kind: 'auto_reply', subject: 'Réponse automatique', returnDate: null });
    expect(resumeAt(en.returnDate, en.date)).toEqual(new Date('2026-12-04T00:00:00Z'));
    expect(resumeAt(fr.returnDate, fr.date)).toEqual(new Date('2026-11-30T10:00:00Z'));
  });

  it('a human reply is a message with its thread ids, sender (lower-cased) and Date', async () => {
    const mail = await classify(fixture('reply.eml'), NOW);
    expect(mail).toMatchObject({
      kind: 'message',
      from: 'ann@example.org',
      messageId: '<reply-1@example.org>',
      date: new Date('2026-11-23T09:30:00Z'),
      report: null,
    });
    expect(mail.threadIds).toEqual(expect.arrayContaining(['<abc-123@ours.test>', '<first@ours.test>']));
  });

  it('reads return dates in several formats, only within 60 days', () => {
    const at = (text: string) => findReturnDate(text, NOW)?.toISOString().slice(0, 10) ?? null;
    expect(at('back on 2026-12-01')).toBe('2026-12-01');
    expect(at('until December 3')).toBe('2026-12-03');
    expect(at('until 3 December')).toBe('2026-12-03');
    expect(at('bis 03.12.2026')).toBe('2026-12-03');
    expect(at('until 12/03/2026')).toBe('2026-12-03');
    expect(at('back January 5th')).toBe('2027-01-05');
    expect(at('back on 2027-06-01')).toBeNull();
    expect(at('I was away on 2026-11-01')).toBeNull();
    expect(at('no date at all')).toBeNull();
  });
});
