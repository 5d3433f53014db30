import { classify } from '../../apps/core/src/inbound/classify';
import { filteringGateway } from '../../apps/core/src/inbound/bounces/gateways';
import { parseHeaders } from '../../apps/core/src/inbound/bounces/mime';

/**
 * A "user unknown" is proof of a dead address only from the mailbox's own server: a filtering appliance in front of it
 * (McAfee, MXLogic, SurfControl, ActiveHunter, MailFoundry) or a reception filter answering "550 : User unknown" is
 * sisimai's `filtered`, a mailbox failure, unless an x.1.x status says the mailbox server's verdict.
 */
const NOW = new Date('2026-11-25T00:00:00Z');

function dsn(options: { headers?: string; status: string; diagnostic: string }): Buffer {
  return Buffer.from(
    [
      'From: Mail Delivery System <MAILER-DAEMON@gw.remote.test>',
      'To: sales@ours.test',
      'Subject: Delivery Status',
      ...(options.headers ? [options.headers] : []),
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'Your message could not be delivered.',
      '',
      '--b1',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; gw.remote.test',
      '',
      'Final-Recipient: rfc822; someone@remote.test',
      'Action: failed',
      `Status: ${options.status}`,
      `Diagnostic-Code: smtp; ${options.diagnostic}`,
      '',
      '--b1',
      'Content-Type: text/rfc822-headers',
      '',
      'From: sales@ours.test',
      'To: someone@remote.test',
      'Message-ID: <m1@ours.test>',
      '',
      '--b1--',
      '',
    ].join('\r\n'),
  );
}

const GATEWAY_HEADERS: [string, string][] = [
  ['McAfee', 'X-NAI-Header: Modified by McAfee Email and Web Security Appliance (3300)'],
  ['SurfControl', 'X-Mailer: SurfControl E-mail Filter'],
  ['ActiveHunter', 'X-AHMAILID: 20261125T000000+0900-00000-0000-ff'],
  ['MailFoundry', 'Received: from localhost (127.0.0.1) by gw.remote.test (MAILFOUNDRY) id ffff for someone@remote.test;\r\n    Wed, 25 Nov 2026 00:00:00 +0000'],
];

describe('filtering gateways and reception filters', () => {
  it.each(GATEWAY_HEADERS)('knows %s by the header it adds to its reports', (name, line) => {
    expect(filteringGateway(parseHeaders(line))).toBe(name);
  });

  it('knows MXLogic by the address its reports come from, and no gateway in a plain report', () => {
    expect(filteringGateway(parseHeaders('From: "Mail Delivery System" <MAILER-DAEMON@00000000.mxlogic.net>'))).toBe('MXLogic');
    expect(filteringGateway(parseHeaders('From: MAILER-DAEMON@mx.remote.test\r\nX-Mailer: Postfix\r\nReceived: from a by b (Postfix)'))).toBeNull();
  });

  it("reads a McAfee gateway's bare \"Unknown user\" as a mailbox failure; the same words from the mailbox's server are a dead address", async () => {
    const report = { status: '5.0.0', diagnostic: '550 Unknown user someone@remote.test' };
    const filtered = await classify(dsn({ ...report, headers: GATEWAY_HEADERS[0]![1] }), NOW);
    expect(filtered.report).toMatchObject({ recipient: 'someone@remote.test', reason: 'onhold', reasonClass: 'mailbox', dead: false });
    const plain = await classify(dsn(report), NOW);
    expect(plain.report).toMatchObject({ recipient: 'someone@remote.test', reason: 'userunknown', reasonClass: 'dead', dead: true });
  });

  it('reads a gateway\'s "user unknown" under 5.1.1 as a dead address: the status is the mailbox server\'s verdict', async () => {
    const mail = await classify(dsn({ headers: GATEWAY_HEADERS[1]![1], status: '5.1.1', diagnostic: '550 5.1.1 <someone@remote.test>... User unknown' }), NOW);
    expect(mail.report).toMatchObject({ reason: 'userunknown', dead: true });
  });

  it('reads "550 : User unknown", a refusal that names no address, as a reception filter, and "550 <address>: User unknown" as dead', async () => {
    const filtered = await classify(dsn({ status: '5.0.0', diagnostic: '550 : User unknown' }), NOW);
    expect(filtered.report).toMatchObject({ reason: 'onhold', reasonClass: 'mailbox', dead: false });
    const named = await classify(dsn({ status: '5.0.0', diagnostic: '550 <someone@remote.test>: User unknown' }), NOW);
    expect(named.report).toMatchObject({ reason: 'userunknown', dead: true });
  });

  it('reads an account disabled as a mailbox failure, not a dead address', async () => {
    const mail = await classify(dsn({ status: '5.7.13', diagnostic: '525 5.7.13 User account disabled' }), NOW);
    expect(mail.report).toMatchObject({ reason: 'suspend', reasonClass: 'mailbox', dead: false });
  });

  it("takes the server's own status after its reply code over the reporter's words before it", async () => {
    const mail = await classify(
      dsn({ status: '5.0.0', diagnostic: "5.1.0 - Unknown address error 550-'5.7.1 <bounce-1@ours.test>... Access denied' (delivery attempts: 0)" }),
      NOW,
    );
    expect(mail.report).toMatchObject({ status: '5.7.1', reasonClass: 'not_address', dead: false });
  });

  it("reads a local delivery program's failure under 5.1.1 as a mailer error, and a blocklist's link as blocked", async () => {
    const procmail = await classify(dsn({ status: '5.1.1', diagnostic: 'procmail: Couldn\'t create "/var/spool/mail/someone"' }), NOW);
    expect(procmail.report).toMatchObject({ reason: 'mailererror', dead: false });
    const listed = await classify(dsn({ status: '5.1.3', diagnostic: '553 http://www.spamhaus.org/query/bl?ip=192.0.2.222' }), NOW);
    expect(listed.report).toMatchObject({ reason: 'blocked', dead: false });
  });
});
