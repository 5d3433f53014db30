import crypto from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { db } from '../../apps/core/src/db';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeList } from '../helpers/factories';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { addSubscriber as addToList, requireAccountList } from '../../apps/core/src/subscribers/machine';
import { addSubscriber, rawHeaders, waitStatus } from './support';

const sink = useMail({ queues: ['delivery', 'broadcast'] });
const app = useApi();

/** A new account's mailbox at `address` that signs with the key (PEM) under `selector` of the address's domain. */
async function signingMailbox(address: string, selector: string, pem: string) {
  const account = await makeAccount();
  const domain = address.split('@')[1]!;
  const created = await asAdmin(app.api).post('/admin/api/mailboxes').send({ account: account.id, address, smtp: sink.url, dkim: { domain, selector, private_key: pem } });
  return { account, created };
}

it('a mailbox with a DKIM key signs its broadcast copies (covering the RFC 8058 headers) and its other email; the key is never echoed', async () => {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const txt = `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  const { account, created } = await signingMailbox('news@signed.example', 'mail2026', pem);
  expect(created.status).toBe(201);
  expect(created.body.mailbox.dkim).toEqual({ domain: 'signed.example', selector: 'mail2026' });
  expect(JSON.stringify(created.body)).not.toContain('PRIVATE KEY');
  const stored = await db().mailbox.findUniqueOrThrow({ where: { id: created.body.mailbox.id } });
  expect(stored.dkimPrivateKeyEnc).toMatch(/^v1:/);
  expect(stored.dkimPrivateKeyEnc).not.toContain('PRIVATE KEY');
  const listed = await asAdmin(app.api).get('/admin/api/mailboxes');
  expect(JSON.stringify(listed.body)).not.toContain('PRIVATE KEY');

  const list = await makeList(account.id, created.body.mailbox.id, { confirm: false });
  const listRow = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  await addSubscriber(listRow.id, 'signed@readers.org', { name: 'Sig' });
  const b = await asAdmin(app.api).post('/admin/api/broadcasts').send({ list: list.key, subject: 'Signed', html: '<p>Hello {{name}}</p>' });
  await asAdmin(app.api).patch(`/admin/api/broadcasts/${b.body.broadcast.id}`).send({ status: 'sending' });
  await waitStatus(b.body.broadcast.id, 'sent');
  const mail = sink.to('signed@readers.org')[0]!;
  const signature = rawHeaders(mail).get('dkim-signature')![0]!;
  expect(signature).toMatch(/d=signed\.example/);
  const signed = /(?:^|;)h=([^;]+)/.exec(signature.replace(/\s+/g, ''))![1]!.toLowerCase().split(':');
  expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post', 'list-id', 'from', 'subject']));

  const resolver = async (name: string, type: string) => {
    if (name === 'mail2026._domainkey.signed.example' && type === 'TXT') return [[txt]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  const verified = await dkimVerify(mail.raw, { resolver });
  expect(verified.results[0]!.status.result).toBe('pass');
  // and a tampered copy fails: the check has teeth
  const tampered = Buffer.from(mail.raw.toString('utf8').replace('List-Unsubscribe-Post: List-Unsubscribe=One-Click', 'List-Unsubscribe-Post: nothing'));
  expect((await dkimVerify(tampered, { resolver })).results[0]!.status.result).toBe('fail');

  // other kinds of email from the mailbox are signed too: a confirmation email
  const confirmList = await makeList(account.id, created.body.mailbox.id, { confirm: true });
  await addToList(db(), await requireAccountList(db(), account.id, confirmList.key), { email: 'confirm@readers.org' }, 'api');
  const confirmation = await waitFor(() => sink.to('confirm@readers.org')[0], { timeout: 20_000, what: 'the confirmation email' });
  expect((await dkimVerify(confirmation.raw, { resolver })).results[0]!.status.result).toBe('pass');

  // PATCH removes the key: mail from the mailbox goes out unsigned
  const patched = await asAdmin(app.api).patch(`/admin/api/mailboxes/${created.body.mailbox.id}`).send({ dkim: null, max_per_second: 50 });
  expect(patched.body.mailbox).toMatchObject({ dkim: null, max_per_second: 50 });
  expect((await asAdmin(app.api).patch(`/admin/api/mailboxes/${created.body.mailbox.id}`).send({ dkim: { domain: 'signed.example', selector: 's', private_key: 'nope' } })).status).toBe(400);
});

it('a mailbox with an Ed25519 key signs with it (RFC 8463), the signature verified by mailauth', async () => {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  // RFC 8463 section 4.2: p= is the raw 32-byte key, the SPKI's last 32 bytes
  const txt = `v=DKIM1; k=ed25519; p=${publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('base64')}`;
  const { account, created } = await signingMailbox('news@edsigned.example', 'ed2026', pem);
  expect(created.status).toBe(201);
  const confirmList = await makeList(account.id, created.body.mailbox.id, { confirm: true });
  await addToList(db(), await requireAccountList(db(), account.id, confirmList.key), { email: 'ed@readers.org' }, 'api');
  const mail = await waitFor(() => sink.to('ed@readers.org')[0], { timeout: 20_000, what: 'the confirmation email' });
  const signature = rawHeaders(mail).get('dkim-signature')![0]!;
  expect(signature.replace(/\s+/g, '')).toMatch(/a=ed25519-sha256;/);
  const resolver = async (name: string, type: string) => {
    if (name === 'ed2026._domainkey.edsigned.example' && type === 'TXT') return [[txt]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  expect((await dkimVerify(mail.raw, { resolver })).results[0]!.status.result).toBe('pass');
});
