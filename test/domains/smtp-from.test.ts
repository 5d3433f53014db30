import { db } from '../../apps/core/src/db';
import { deliverMessage } from '../../apps/core/src/delivery/deliver';
import { asAdmin, useApi } from '../helpers/api';
import { useDns } from '../helpers/dns-server';
import { makeAccount, makeKey, makeMailbox } from '../helpers/factories';
import { useDelivery, useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { submissionClient, useSubmission } from '../smtp/support';
import { published, receiverVerdict, signatures } from './support';

const dns = useDns(['test']);
const delivery = useDelivery();
const sink = useMail({ queues: ['delivery'], delivery });
const app = useApi();
const smtp = useSubmission();

const admin = () => asAdmin(app.api);

/** The account's domain added, its records published (DMARC strict) and checked: verified. */
async function verifiedDomain(account: number, name: string) {
  const added = await admin().post('/admin/api/domains').send({ account, name });
  expect(added.status).toBe(201);
  await dns.publish([...dns.current(), ...published(added.body.domain.records, { dmarc: 'v=DMARC1; p=reject; adkim=s' })]);
  const checked = await admin().post(`/admin/api/domains/${added.body.domain.id}/verify`);
  expect(checked.body.domain).toMatchObject({ name, status: 'verified' });
  return checked.body.domain as { id: number; dkim: { selector: string }[] };
}

it('over SMTP, a From of a domain the account verified (not the key’s mailbox, another domain) is 250 and arrives signed d= that domain with RSA and Ed25519, DMARC aligned', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'app@shop.test', smtp: sink.url });
  const { token } = await makeKey(account.id, mailbox.id);
  const domain = await verifiedDomain(account.id, 'brand.test');

  const sent = await submissionClient(smtp.port, token).sendMail({
    from: '"Brand News" <News@Brand.test>',
    to: 'reader@inbox.test',
    subject: 'From the brand',
    text: 'Signed by the brand.',
  });
  expect(sent.response).toMatch(/^250 2\.0\.0 OK: queued as [0-9a-f-]{36}/);

  const mail = await waitFor(() => sink.to('reader@inbox.test').find((m) => m.parsed.subject === 'From the brand'), { timeout: 20_000, what: 'the brand’s email' });
  // the From as the client wrote it (nodemailer lower-cases an address's domain; the case of the rest is kept)
  expect(mail.parsed.from?.value).toEqual([{ name: 'Brand News', address: 'News@brand.test' }]);
  const verdict = await receiverVerdict(dns, mail, mail.envelope.from as string);
  expect(signatures(verdict)).toEqual([
    { selector: domain.dkim[0]!.selector, algorithm: 'rsa-sha256', result: 'pass', domain: 'brand.test' },
    { selector: domain.dkim[1]!.selector, algorithm: 'ed25519-sha256', result: 'pass', domain: 'brand.test' },
  ]);
  expect(verdict.dmarc && verdict.dmarc.status.result).toBe('pass');
  expect(verdict.dmarc && (verdict.dmarc as { alignment: { dkim: { result: string } } }).alignment.dkim.result).toBe('brand.test');
  expect(await db().send.count({ where: { accountId: account.id } })).toBe(1);
});

it('over SMTP, a From of a domain the account has not verified (never added, only pending, or verified by another account) is 550 5.7.1 and stores nothing', async () => {
  const owner = await makeAccount();
  await makeMailbox(owner.id, { address: 'hello@owner.test', smtp: sink.url });
  await verifiedDomain(owner.id, 'owned.test');

  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'app@mine.test', smtp: sink.url });
  const { token } = await makeKey(account.id, mailbox.id);
  const pending = await admin().post('/admin/api/domains').send({ account: account.id, name: 'pending.test' });
  expect(pending.body.domain.status).toBe('pending');

  for (const from of ['news@stranger.test', 'news@pending.test', 'news@owned.test']) {
    const refused = submissionClient(smtp.port, token).sendMail({ from, to: 'nobody@inbox.test', subject: `Refused ${from}`, text: 'never' });
    await expect(refused).rejects.toMatchObject({ responseCode: 550 });
    await expect(refused).rejects.toThrow(new RegExp(`5\\.7\\.1 From ${from.replace(/\./g, '\\.')}: this key sends only from app@mine\\.test or an address of a domain the account verified`));
  }
  expect(await db().send.count({ where: { accountId: account.id } })).toBe(0);
  expect(await db().message.count({ where: { accountId: account.id } })).toBe(0);
  expect(await db().message.count({ where: { to: 'nobody@inbox.test' } })).toBe(0);
  expect(sink.to('nobody@inbox.test')).toHaveLength(0);
});

it('the From its submission parsed is stored with the send at accept and is what delivery signs with; a send stored before it was (no header_from) is still signed d= its MIME’s From', async () => {
  const account = await makeAccount();
  const mailbox = await makeMailbox(account.id, { address: 'app@desk.test', smtp: sink.url });
  const { token } = await makeKey(account.id, mailbox.id);
  const label = await verifiedDomain(account.id, 'label.test');
  const sister = await verifiedDomain(account.id, 'sister.test');

  await submissionClient(smtp.port, token).sendMail({ from: '"Label" <News@Label.test>', to: 'stored@inbox.test', subject: 'Stored From', text: 'Signed by the stored From.' });
  const first = await waitFor(() => sink.to('stored@inbox.test')[0], { timeout: 20_000, what: 'the label’s email' });
  const send = await db().send.findFirstOrThrow({ where: { accountId: account.id } });
  expect(send.headerFrom).toBe('news@label.test');
  expect(signatures(await receiverVerdict(dns, first, first.envelope.from as string)).map((s) => s.domain)).toEqual(['label.test', 'label.test']);

  // the copy delivered again (as a retry would be) with another From stored than its MIME's and then with none
  const copy = await db().message.findFirstOrThrow({ where: { sendId: send.id } });
  const again = async (headerFrom: string | null, count: number) => {
    await db().send.update({ where: { id: send.id }, data: { headerFrom } });
    await db().message.update({ where: { id: copy.id }, data: { status: 'queued', lockedUntil: null } });
    expect(await deliverMessage(delivery.delivery, copy.id, { lastAttempt: false })).toMatchObject({ kind: 'sent' });
    const mail = await waitFor(() => sink.to('stored@inbox.test')[count - 1], { timeout: 20_000, what: `copy ${count}` });
    // the MIME is the client's, byte for byte, whichever From signs it
    expect(mail.parsed.from?.value).toEqual([{ name: 'Label', address: 'News@label.test' }]);
    return signatures(await receiverVerdict(dns, mail, mail.envelope.from as string));
  };
  // d= follows the stored From, not a parse of the MIME at delivery
  expect(await again('news@sister.test', 2)).toEqual([
    { selector: sister.dkim[0]!.selector, algorithm: 'rsa-sha256', result: 'pass', domain: 'sister.test' },
    { selector: sister.dkim[1]!.selector, algorithm: 'ed25519-sha256', result: 'pass', domain: 'sister.test' },
  ]);
  // a send accepted before migration 20261127101000_header_from has none: its MIME's From still picks the keys
  expect(await again(null, 3)).toEqual([
    { selector: label.dkim[0]!.selector, algorithm: 'rsa-sha256', result: 'pass', domain: 'label.test' },
    { selector: label.dkim[1]!.selector, algorithm: 'ed25519-sha256', result: 'pass', domain: 'label.test' },
  ]);
});
