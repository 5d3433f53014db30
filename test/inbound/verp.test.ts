import { bounceOfAnswer } from '../../apps/core/src/inbound/bounce-policy';
import { messageOfVerp, verpAddress, verpToken } from '../../apps/core/src/delivery/verp';

describe('VERP tokens (docs/inbound.md)', () => {
  const id = '5f0e0c52-8a63-4a2e-9a3c-0d5f2b0b7e11';

  it('name the message, survive a lower-cased local part, and refuse a changed token', () => {
    const address = verpAddress('Sales+old@Example.com', id);
    expect(address).toMatch(/^Sales\+b-[a-z2-7]{34}@Example\.com$/);
    expect(messageOfVerp(address)).toBe(id);
    expect(messageOfVerp(`Delivered-To: ${address.toLowerCase()}`)).toBe(id);
    expect(messageOfVerp(address.toUpperCase())).toBe(id);
    const token = verpToken(id);
    const other = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11);
    expect(messageOfVerp(`sales+b-${other}@example.com`)).toBeNull();
    expect(messageOfVerp('sales@example.com')).toBeNull();
  });
});

describe('SMTP answers at delivery, read as bounce reasons', () => {
  it.each([
    ['550 5.1.1 <a@b.test>: Recipient address rejected: User unknown', 'RCPT TO', 'userunknown', 'dead'],
    ['552 5.2.2 Mailbox full', 'RCPT TO', 'mailboxfull', 'mailbox'],
    ['554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using zen.spamhaus.org', 'RCPT TO', 'blocked', 'not_address'],
    ['552 5.3.4 Message size exceeds fixed limit', 'DATA', 'mesgtoobig', 'not_address'],
    ['554 rejected', 'DATA', 'contenterror', 'not_address'],
  ])('%s (%s) is %s', (answer, command, reason, klass) => {
    expect(bounceOfAnswer(answer, command)).toMatchObject({ reason, class: klass, dead: klass === 'dead' });
  });
});
