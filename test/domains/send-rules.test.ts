import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { Mailbox } from '../../generated/prisma/client';
import { db } from '../../apps/core/src/db';
import { generateKeyPairs } from '../../apps/core/src/domains/keys';
import {
  displayNameRefusal,
  DomainSigner,
  DomainStandings,
  ForeignMailboxes,
  fromRefusal,
  mailboxStartRefusal,
  signOnTheWay,
  type DomainStanding,
} from '../../apps/core/src/domains/sending';
import { makeAccount, makeMailbox } from '../helpers/factories';

/**
 * The sending rules of domains/sending.ts, word for word, without HTTP or SMTP around them: who may be the From, the
 * display name, Reply-To and Sender, and the caches of domain standings and signing keys.
 */
const standings = (entries: [string, DomainStanding][]) => new Map(entries);
const rule = (over: Partial<Parameters<typeof fromRefusal>[0]> = {}) => ({
  mailboxAddress: 'Hi@Ours.test',
  domains: standings([]),
  requireVerified: false,
  domainAddresses: false,
  ...over,
});

describe('fromRefusal', () => {
  it("allows the key's mailbox whatever its case and spaces, and refuses another address naming the mailbox", () => {
    expect(fromRefusal(rule(), ' hi@OURS.test ')).toBeNull();
    expect(fromRefusal(rule(), 'other@ours.test')).toBe('this key sends only from Hi@Ours.test');
  });

  it('allows any address of a verified domain only where domain addresses are allowed, and says so when refusing', () => {
    const verified = standings([['ours.test', { status: 'verified', reason: null }]]);
    expect(fromRefusal(rule({ domains: verified, domainAddresses: true }), 'Anyone@Ours.test')).toBeNull();
    expect(fromRefusal(rule({ domains: verified }), 'anyone@ours.test')).toBe('this key sends only from Hi@Ours.test');
    const pending = standings([['ours.test', { status: 'pending', reason: null }]]);
    expect(fromRefusal(rule({ domains: pending, domainAddresses: true }), 'anyone@ours.test')).toBe(
      'this key sends only from Hi@Ours.test or an address of a domain the account verified',
    );
  });

  it('under REQUIRE_VERIFIED_DOMAIN names the domain and what is missing: never added, or its status and reason', () => {
    const required = { requireVerified: true };
    expect(fromRefusal(rule(required), 'hi@ours.test')).toBe(
      'the domain ours.test is not a verified sending domain of this account: add it (POST /admin/api/domains), publish its DKIM and SPF records and check it',
    );
    expect(fromRefusal(rule({ ...required, domains: standings([['ours.test', { status: 'failed', reason: 'no DKIM record at k1r._domainkey.ours.test' }]]) }), 'hi@ours.test')).toBe(
      'the domain ours.test is not verified (failed): no DKIM record at k1r._domainkey.ours.test',
    );
    expect(fromRefusal(rule({ ...required, domains: standings([['ours.test', { status: 'pending', reason: null }]]) }), 'hi@ours.test')).toBe('the domain ours.test is not verified (pending)');
    expect(fromRefusal(rule({ ...required, domains: standings([['ours.test', { status: 'verified', reason: null }]]) }), 'hi@ours.test')).toBeNull();
  });

  it('shows an internationalised domain as people write it, with its punycode beside it', () => {
    const idn = rule({ mailboxAddress: 'hi@xn--bcher-kva.test', requireVerified: true });
    expect(fromRefusal(idn, 'hi@xn--bcher-kva.test')).toMatch(/^the domain bücher\.test \(xn--bcher-kva\.test\) is not a verified sending domain/);
  });
});

describe('displayNameRefusal', () => {
  it('refuses a display name that is an address however it is dressed, and allows a name', () => {
    for (const name of ['ceo@bank.example', '"CEO" <ceo@bank.example>', 'ceo @ bank.example', 'ceo\uFF20bank.example']) {
      expect(displayNameRefusal(name)).toBe('the display name may not be an address (mail clients show it as the sender)');
    }
    for (const name of ['Ann Smith', 'Sales @ Ours', 'a@b', '']) expect(displayNameRefusal(name)).toBeNull();
  });
});

describe('ForeignMailboxes', () => {
  it("refuses another account's mailbox as Reply-To or Sender, named in lower case; the account's own and none pass", async () => {
    const ours = await makeAccount();
    const theirs = await makeAccount();
    const own = await makeMailbox(ours.id, { address: `own-${ours.id}@ours.test` });
    const made = await makeMailbox(theirs.id, { address: `sales-${theirs.id}@theirs.test` });
    // a row written in mixed case (an older row, or one written by hand) is still found
    const other = await db().mailbox.update({ where: { id: made.id }, data: { address: `Sales-${theirs.id}@Theirs.test` } });
    const foreign = new ForeignMailboxes();
    expect(await foreign.refusal(db(), ours.id, [` ${other.address.toUpperCase()} `])).toBe(
      `${other.address.toLowerCase()} is another account's mailbox: it may not be a Reply-To or Sender`,
    );
    expect(await foreign.refusal(db(), ours.id, [own.address, 'nobody@else.test'])).toBeNull();
    expect(await foreign.refusal(db(), theirs.id, [other.address])).toBeNull();
    expect(await foreign.refusal(db(), ours.id, ['', '  '])).toBeNull();
  });

  it('keeps each answer for a while (no query), then asks again', async () => {
    const ours = await makeAccount();
    const theirs = await makeAccount();
    const address = `later-${theirs.id}@theirs.test`;
    const foreign = new ForeignMailboxes();
    const t0 = Date.now();
    expect(await at(t0, () => foreign.refusal(db(), ours.id, [address]))).toBeNull();
    await makeMailbox(theirs.id, { address });
    // the answer kept: still null within the ten seconds, even though the mailbox now exists
    expect(await at(t0 + 9_999, () => foreign.refusal(db(), ours.id, [address]))).toBeNull();
    expect(await at(t0 + 10_000, () => foreign.refusal(db(), ours.id, [address]))).toMatch(/another account's mailbox/);
  });
});

describe('mailboxStartRefusal', () => {
  it('lets every mailbox start when verified domains are not required (the tests’ setting)', async () => {
    const account = await makeAccount();
    expect(await mailboxStartRefusal(db(), { accountId: account.id, address: 'hi@never-added.test' })).toBeNull();
  });
});

/** What `run` does with the clock standing at `time` (epoch ms). */
async function at<T>(time: number, run: () => Promise<T>): Promise<T> {
  const spy = jest.spyOn(Date, 'now').mockReturnValue(time);
  try {
    return await run();
  } finally {
    spy.mockRestore();
  }
}

describe('DomainStandings', () => {
  it("keeps each account's domain statuses for 10 s, then reads them again", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const domain = await db().domain.create({ data: { accountId: a.id, name: 'cached.test', status: 'pending', reason: 'no SPF record' } });
    await db().domain.create({ data: { accountId: b.id, name: 'other.test', status: 'verified' } });
    const cache = new DomainStandings();
    const t = Date.now();
    expect(await at(t, () => cache.of(db(), a.id))).toEqual(new Map([['cached.test', { status: 'pending', reason: 'no SPF record' }]]));
    expect(await at(t, () => cache.of(db(), b.id))).toEqual(new Map([['other.test', { status: 'verified', reason: null }]]));
    await db().domain.update({ where: { id: domain.id }, data: { status: 'verified', reason: null } });
    expect((await at(t + 9_999, () => cache.of(db(), a.id))).get('cached.test')).toEqual({ status: 'pending', reason: 'no SPF record' });
    // 10 s after the read, to the millisecond, the entry is old
    expect((await at(t + 10_000, () => cache.of(db(), a.id))).get('cached.test')).toEqual({ status: 'verified', reason: null });
  });
});

describe('DomainSigner', () => {
  async function verifiedDomain(accountId: number, name: string, status: 'verified' | 'pending' = 'verified') {
    const domain = await db().domain.create({ data: { accountId, name, status } });
    await db().domainKey.create({ data: { domainId: domain.id, state: 'active', ...generateKeyPairs('k1') } });
    return domain;
  }

  it("signs with the active keys of the account's verified domain only, kept for its time to live", async () => {
    const account = await makeAccount();
    const other = await makeAccount();
    const domain = await verifiedDomain(account.id, 'signed.test');
    await verifiedDomain(other.id, 'theirs.test');
    await verifiedDomain(account.id, 'pending.test', 'pending');
    const signer = new DomainSigner(60_000);
    const t = Date.now();
    const found = await at(t, () => signer.keysFor(db(), { accountId: account.id, address: 'News@Signed.test' }));
    expect(found).toEqual({ domain: 'signed.test', keys: [expect.objectContaining({ selector: 'k1r' }), expect.objectContaining({ selector: 'k1e' })] });
    expect(await signer.keysFor(db(), { accountId: account.id, address: 'news@theirs.test' })).toBeNull();
    expect(await signer.keysFor(db(), { accountId: account.id, address: 'news@pending.test' })).toBeNull();
    // a newer active pair shows once the entry is older than the time to live
    await db().domainKey.updateMany({ where: { domainId: domain.id }, data: { state: 'retired' } });
    await db().domainKey.create({ data: { domainId: domain.id, state: 'active', ...generateKeyPairs('k2') } });
    expect((await at(t + 59_999, () => signer.keysFor(db(), { accountId: account.id, address: 'news@signed.test' })))!.keys[0]).toMatchObject({ selector: 'k1r' });
    const fresh = await at(t + 60_000, () => signer.keysFor(db(), { accountId: account.id, address: 'news@signed.test' }));
    expect(fresh!.keys.map((k) => k.selector)).toEqual(['k2r', 'k2e']);
  });

  it("leaves a mailbox's own DKIM to its transport, an unverified domain's mail unchanged, and signs a submitted From's domain", async () => {
    const account = await makeAccount();
    await verifiedDomain(account.id, 'submit.test');
    const made = await makeMailbox(account.id, { address: 'hi@unverified.test' });
    const mailbox: Mailbox = await db().mailbox.findUniqueOrThrow({ where: { id: made.id } });
    const signer = new DomainSigner();
    const mail = { from: 'hi@unverified.test', to: 'a@inbox.test', subject: 'Hi', text: 'Hi', envelope: { from: 'hi@unverified.test', to: ['a@inbox.test'] } };
    expect(await signer.sign(db(), mail, mailbox)).toBe(mail);
    const own: Mailbox = { ...mailbox, address: 'hi@submit.test', dkimPrivateKeyEnc: 'own key' };
    expect(await signer.sign(db(), { ...mail, from: 'hi@submit.test' }, own)).toEqual({ ...mail, from: 'hi@submit.test' });
    // a raw message submitted over SMTP: d= is the domain of its From, not the mailbox's
    const raw = await new MailComposer({ from: 'Ann <ann@submit.test>', to: 'a@inbox.test', subject: 'Hi', text: 'Hi' }).compile().build();
    const signed = await signer.sign(db(), { raw, from: 'ann@submit.test', envelope: mail.envelope }, mailbox);
    // signed on the way to the wire, by the transport's stream plugin, as the worker's transports do (delivery/transport.ts)
    const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
    transport.use('stream', signOnTheWay);
    const sent = await transport.sendMail(signed);
    expect(sent.envelope).toEqual({ from: mail.envelope.from, to: mail.envelope.to });
    const wire = sent.message as Buffer;
    const head = wire.toString('latin1').split('\r\n\r\n')[0]!;
    expect(head.match(/^DKIM-Signature:.*$/gm)).toEqual([expect.stringContaining('d=submit.test'), expect.stringContaining('d=submit.test')]);
    // the client's bytes as written, the signatures on top
    expect(wire.subarray(-raw.length).equals(raw)).toBe(true);
  });
});
