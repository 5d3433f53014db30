import { db } from '../../apps/core/src/db';
import { createDelivery, type Delivery } from '../../apps/core/src/delivery/deliver';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { recheckDueDomains } from '../../apps/core/src/domains/schedule';
import { asAdmin, as, useApi } from '../helpers/api';
import { txt, useDns } from '../helpers/dns-server';
import { makeAccount, makeKey, makeMailbox, wantEvents } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { createMailbox } from '../../apps/core/src/mailboxes';
import { useMail } from '../helpers/mail';
import { waitFor } from '../helpers/wait';
import { published, receiverVerdict, signatures } from './support';

const dns = useDns(['test']);
// signing reads a domain's keys afresh for every email here, so a rotation shows at once (a worker keeps them 30 s)
const own: { delivery?: Delivery } = {};
beforeAll(() => {
  own.delivery = createDelivery(db(), deliveryRegistrations(), { domainKeysTtlMs: 0 });
});
const sink = useMail({
  queues: ['delivery'],
  delivery: {
    get delivery() {
      return own.delivery!;
    },
  },
});
const app = useApi();

const admin = () => asAdmin(app.api);

async function domainEvents(account: number, type: string) {
  return db().event.findMany({ where: { accountId: account, type }, orderBy: { id: 'asc' } });
}

async function sendOne(token: string, to: string, subject: string) {
  const res = await as(app.api, token).post('/api/v1/send').send({ to, subject, text: `Body of ${subject}` });
  expect(res.status).toBe(202);
  return waitFor(() => sink.messages.find((m) => m.parsed.subject === subject), { timeout: 20_000, what: subject });
}

it('a domain added, published and verified signs with RSA and Ed25519; mailauth passes DKIM twice and DMARC aligned; rotation keeps every email verifiable; a lost record fails it after two checks', async () => {
  const account = await makeAccount();
  await wantEvents(account.id);
  const mailbox = await makeMailbox(account.id, { address: 'news@brand.test', smtp: sink.url });
  const { token } = await makeKey(account.id, mailbox.id);

  const added = await admin().post('/admin/api/domains').send({ account: account.id, name: '  Brand.TEST. ' });
  expect(added.status).toBe(201);
  const domain = added.body.domain;
  expect(domain).toMatchObject({ account: account.id, name: 'brand.test', display_name: 'brand.test', status: 'pending', checked_at: null, verified_at: null });
  expect(domain.dkim.map((k: { algorithm: string }) => k.algorithm)).toEqual(['rsa', 'ed25519']);
  expect(domain.records.map((r: { purpose: string; host: string }) => `${r.purpose} ${r.host}`)).toEqual([
    `dkim ${domain.dkim[0].selector}._domainkey.brand.test`,
    `dkim ${domain.dkim[1].selector}._domainkey.brand.test`,
    'spf brand.test',
    'dmarc _dmarc.brand.test',
  ]);
  expect(domain.records[2].value).toBe('v=spf1 ip4:127.0.0.1 ~all');
  expect(JSON.stringify(added.body)).not.toMatch(/PRIVATE KEY/);
  const keys = await db().domainKey.findMany({ where: { domainId: domain.id } });
  expect(keys[0]!.rsaPrivateKeyEnc).toMatch(/^v1:/);
  expect(keys[0]!.ed25519PrivateKeyEnc).toMatch(/^v1:/);

  // nothing published yet: checked, still pending, each record missing with what DNS said
  const early = await admin().post(`/admin/api/domains/${domain.id}/verify`);
  expect(early.status).toBe(200);
  expect(early.body.domain.status).toBe('pending');
  expect(early.body.domain.records.every((r: { status: string; seen: string[] }) => r.status === 'missing' && r.seen.length === 0)).toBe(true);
  expect(early.body.domain.reason).toContain(`DKIM (RSA) missing at ${domain.dkim[0].selector}._domainkey.brand.test`);

  // published as a DNS host would (the 400-character RSA value split in 255-character strings): verified, with an event
  await dns.publish(published(domain.records, { dmarc: 'v=DMARC1; p=reject; adkim=s' }));
  const checked = await admin().post(`/admin/api/domains/${domain.id}/verify`);
  expect(checked.body.domain).toMatchObject({ status: 'verified', reason: null });
  expect(checked.body.domain.records.map((r: { status: string }) => r.status)).toEqual(['found', 'found', 'found', 'found']);
  expect(checked.body.domain.records[0].seen[0]).toBe(domain.records[0].value);
  expect(await domainEvents(account.id, 'domain.verified')).toHaveLength(1);

  // an email from the verified domain: two signatures, d= the From domain, both pass; DMARC passes aligned (strict)
  const first = await sendOne(token, 'reader@inbox.test', 'Signed one');
  const verdict = await receiverVerdict(dns, first, first.envelope.from);
  expect(signatures(verdict)).toEqual([
    { selector: domain.dkim[0].selector, algorithm: 'rsa-sha256', result: 'pass', domain: 'brand.test' },
    { selector: domain.dkim[1].selector, algorithm: 'ed25519-sha256', result: 'pass', domain: 'brand.test' },
  ]);
  expect(verdict.dmarc && verdict.dmarc.status.result).toBe('pass');
  expect(verdict.dmarc && (verdict.dmarc as { alignment: { dkim: { result: string } } }).alignment.dkim.result).toBe('brand.test');
  expect(verdict.spf && verdict.spf.status.result).toBe('pass');

  // rotation: a new pair published beside the old; signing stays on the old one until DNS shows the new
  const rotated = await admin().post(`/admin/api/domains/${domain.id}/rotate`);
  expect(rotated.status).toBe(200);
  const fresh = rotated.body.domain.dkim.filter((k: { state: string }) => k.state === 'next');
  expect(fresh).toHaveLength(2);
  expect((await admin().post(`/admin/api/domains/${domain.id}/rotate`)).status).toBe(409);
  const second = await sendOne(token, 'reader@inbox.test', 'Signed two');
  expect(signatures(await receiverVerdict(dns, second, second.envelope.from)).map((s) => `${s.selector} ${s.result}`)).toEqual([`${domain.dkim[0].selector} pass`, `${domain.dkim[1].selector} pass`]);
  await dns.publish(published(rotated.body.domain.records, { dmarc: 'v=DMARC1; p=reject; adkim=s' }));
  const moved = await admin().post(`/admin/api/domains/${domain.id}/verify`);
  expect(moved.body.domain.status).toBe('verified');
  expect(moved.body.domain.dkim.map((k: { selector: string; state: string }) => `${k.selector} ${k.state}`)).toEqual([
    `${domain.dkim[0].selector} retired`,
    `${domain.dkim[1].selector} retired`,
    `${fresh[0].selector} active`,
    `${fresh[1].selector} active`,
  ]);
  const old = moved.body.domain.records.find((r: { selector?: string }) => r.selector === domain.dkim[0].selector);
  expect(old).toMatchObject({ status: 'found', required: false, key_state: 'retired' });
  expect(new Date(old.removable_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600_000);
  const third = await sendOne(token, 'reader@inbox.test', 'Signed three');
  // every email stays verifiable: those signed with the old keys and the one with the new
  for (const mail of [first, second, third]) {
    const results = signatures(await receiverVerdict(dns, mail, mail.envelope.from));
    expect(results.map((s) => s.result)).toEqual(['pass', 'pass']);
  }
  expect(signatures(await receiverVerdict(dns, third, third.envelope.from)).map((s) => s.selector)).toEqual([fresh[0].selector, fresh[1].selector]);

  // the periodic check: a record removed fails the domain after two checks in a row, with domain.failed
  await dns.publish(dns.current().filter((r) => !(r.type === 'TXT' && r.host === 'brand.test')));
  const due = () => db().domain.update({ where: { id: domain.id }, data: { nextCheckAt: new Date(Date.now() - 1000) } });
  await due();
  expect(await recheckDueDomains(db())).toBe(1);
  let row = await db().domain.findUniqueOrThrow({ where: { id: domain.id } });
  expect(row).toMatchObject({ status: 'verified', failures: 1 });
  expect(row.reason).toContain('SPF missing at brand.test');
  expect(row.nextCheckAt.getTime()).toBeGreaterThan(Date.now() + 5 * 3600_000);
  expect(await recheckDueDomains(db())).toBe(0);
  await due();
  await recheckDueDomains(db());
  row = await db().domain.findUniqueOrThrow({ where: { id: domain.id } });
  expect(row).toMatchObject({ status: 'failed', failures: 2 });
  const failed = await domainEvents(account.id, 'domain.failed');
  expect(failed).toHaveLength(1);
  expect(failed[0]!.data).toMatchObject({ domain: { id: domain.id, name: 'brand.test', status: 'failed', previous: 'verified' } });
  expect(JSON.stringify(failed[0]!.data)).toContain('SPF missing');
  // a failed domain's mail goes out unsigned by its keys
  const unsigned = await sendOne(token, 'reader@inbox.test', 'Unsigned');
  expect(unsigned.raw.toString()).not.toMatch(/DKIM-Signature/i);

  // published again: verified again, a second domain.verified
  await dns.publish([...dns.current(), txt('brand.test', 'v=spf1 ip4:127.0.0.1 ~all')]);
  expect((await admin().post(`/admin/api/domains/${domain.id}/verify`)).body.domain.status).toBe('verified');
  expect(await domainEvents(account.id, 'domain.verified')).toHaveLength(2);
});

it('reads records as DNS hosts write them: extra spaces, upper case, split strings; several SPF records are an SPF error, said so', async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'hello@spaces.test', smtp: sink.url });
  const { body } = await admin().post('/admin/api/domains').send({ account: account.id, name: 'spaces.test' });
  const [rsa, ed] = body.domain.records;
  const p = (value: string) => /p=(.+)$/.exec(value)![1]!;
  await dns.publish([
    { type: 'TXT', host: rsa.host, strings: ['V=DKIM1 ;  K=rsa;', '  P=', p(rsa.value).slice(0, 200), p(rsa.value).slice(200), ' '] },
    { type: 'TXT', host: ed.host, strings: [`  v = DKIM1; k=ED25519 ; p=${p(ed.value)}  `] },
    txt('spaces.test', 'v=spf1  IP4:127.0.0.1   ~ALL'),
    txt('spaces.test', 'google-site-verification=abc'),
  ]);
  const found = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  expect(found.body.domain.records.map((r: { status: string }) => r.status)).toEqual(['found', 'found', 'found', 'missing']);
  expect(found.body.domain.status).toBe('verified');
  expect(found.body.domain.records[3].problem).toMatch(/recommended/);

  // a second v=spf1 record: receivers answer permerror, so the domain is not verified, and the record says why
  await dns.publish([...dns.current(), txt('spaces.test', 'v=spf1 include:other.test -all')]);
  const two = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  const spf = two.body.domain.records.find((r: { purpose: string }) => r.purpose === 'spf');
  expect(spf).toMatchObject({ status: 'wrong' });
  expect(spf.seen).toHaveLength(2);
  expect(spf.problem).toMatch(/2 v=spf1 records.*permerror/);
  expect(two.body.domain).toMatchObject({ status: 'verified', reason: expect.stringMatching(/SPF wrong at spaces\.test: 2 v=spf1 records/) });

  // a key that is not ours and an SPF that leaves the relay out: wrong, each with its reason
  await dns.publish([
    { type: 'TXT', host: rsa.host, strings: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAnotours'] },
    { type: 'TXT', host: ed.host, strings: [ed.value] },
    txt('spaces.test', 'v=spf1 ip4:192.0.2.1 -all'),
  ]);
  const wrong = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  expect(wrong.body.domain.records[0]).toMatchObject({ status: 'wrong', problem: expect.stringMatching(/not this domain's key/) });
  expect(wrong.body.domain.records[2]).toMatchObject({ status: 'wrong', problem: expect.stringMatching(/fail for the relay 127\.0\.0\.1/) });
  // verified before the two SPF records: that check was its first failure, this one its second in a row
  expect(wrong.body.domain.status).toBe('failed');
});

it('follows SPF includes and refuses a record past 10 DNS lookups', async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'hello@chain.test', smtp: sink.url });
  const { body } = await admin().post('/admin/api/domains').send({ account: account.id, name: 'chain.test' });
  const dkim = published(body.domain.records.slice(0, 2));
  await dns.publish([...dkim, txt('chain.test', 'v=spf1 include:_spf.relay.test -all'), txt('_spf.relay.test', 'v=spf1 a:out.relay.test -all'), { type: 'A', host: 'out.relay.test', address: '127.0.0.1' }]);
  const ok = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  expect(ok.body.domain.status).toBe('verified');

  const chain = Array.from({ length: 11 }, (_, i) => txt(`l${i}.relay.test`, `v=spf1 include:l${i + 1}.relay.test -all`));
  await dns.publish([...dkim, txt('chain.test', 'v=spf1 include:l0.relay.test ip4:127.0.0.1 -all'), ...chain, txt('l11.relay.test', 'v=spf1 -all')]);
  const deep = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  const spf = deep.body.domain.records.find((r: { purpose: string }) => r.purpose === 'spf');
  expect(spf).toMatchObject({ status: 'wrong', problem: expect.stringMatching(/permerror.*(Too many DNS requests|more than 10)/i) });
});

it('refuses names that are not domains, keeps IDNA names as punycode shown both ways, and hides another account\'s domain', async () => {
  const account = await makeAccount();
  const other = await makeAccount();
  for (const name of ['', '   ', 'not a domain', 'https://brand.test/', 'me@brand.test', '127.0.0.1', 'localhost', '-bad.test', `${'a'.repeat(64)}.test`, 'brand..test', 'brand.123', 42]) {
    const res = await admin().post('/admin/api/domains').send({ account: account.id, name });
    expect(res.status).toBe(400);
    expect(res.body.ok).toBe(false);
    expect(res.body.error).toMatch(/name/);
  }
  expect(await db().domain.count({ where: { accountId: account.id } })).toBe(0);
  expect((await admin().post('/admin/api/domains').send({ account: 999_999, name: 'nobody.test' })).status).toBe(404);

  const idna = await admin().post('/admin/api/domains').send({ account: account.id, name: 'Bücher.TEST' });
  expect(idna.status).toBe(201);
  expect(idna.body.domain).toMatchObject({ name: 'xn--bcher-kva.test', display_name: 'bücher.test' });
  expect(idna.body.domain.records[0].host).toMatch(/\._domainkey\.xn--bcher-kva\.test$/);
  expect((await admin().post('/admin/api/domains').send({ account: account.id, name: 'xn--bcher-kva.test' })).status).toBe(409);
  // another account may add the same name: each proves it alone
  const theirs = await admin().post('/admin/api/domains').send({ account: other.id, name: 'bücher.test' });
  expect(theirs.status).toBe(201);

  const id = theirs.body.domain.id;
  for (const call of [
    admin().get(`/admin/api/domains/${id}?account=${account.id}`),
    admin().post(`/admin/api/domains/${id}/verify?account=${account.id}`),
    admin().post(`/admin/api/domains/${id}/rotate?account=${account.id}`),
    admin().delete(`/admin/api/domains/${id}?account=${account.id}`),
  ]) {
    const res = await call;
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ ok: false, error: `no domain with id ${id} in account ${account.id}` });
  }
  expect((await admin().get(`/admin/api/domains/${id}?account=${other.id}`)).status).toBe(200);
  const listed = await admin().get(`/admin/api/domains?account=${account.id}`);
  expect(listed.body.domains.map((d: { name: string }) => d.name)).toEqual(['xn--bcher-kva.test']);
  expect((await admin().get('/admin/api/domains/abc')).status).toBe(400);
  expect((await admin().delete(`/admin/api/domains/${id}`)).status).toBe(200);
  expect((await admin().get(`/admin/api/domains/${id}`)).status).toBe(404);
  expect(await db().domainKey.count({ where: { domainId: id } })).toBe(0);
});

it('the CLI adds, shows, verifies, rotates and removes a domain', async () => {
  const account = await makeAccount();
  await makeMailbox(account.id, { address: 'cli@cli.test', smtp: sink.url });
  const added = await runAdmin('domain', 'add', '--account', String(account.id), '--name', 'CLI.test');
  expect(added.code).toBe(0);
  expect(added.out.domain).toMatchObject({ name: 'cli.test', status: 'pending' });
  expect(JSON.stringify(added.out)).not.toMatch(/PRIVATE KEY/);
  const id = String(added.out.domain.id);
  await dns.publish(published(added.out.domain.records));
  const verified = await runAdmin('domain', 'verify', id);
  expect(verified.out.domain.status).toBe('verified');
  expect(verified.out.domain.records.map((r: { status: string }) => r.status)).toEqual(['found', 'found', 'found', 'found']);
  expect((await runAdmin('domain', 'rotate', id)).out.domain.dkim).toHaveLength(4);
  const refused = await runAdmin('domain', 'add', '--account', String(account.id), '--name', 'not a domain');
  expect(refused.code).not.toBe(0);
  expect(refused.err).toMatch(/not a domain name/);
  expect((await runAdmin('domain', 'remove', id)).code).toBe(0);
  expect(await db().domain.count({ where: { accountId: account.id } })).toBe(0);
  // five processes, each starting tsx: slow on a busy machine
}, 240_000);

it('lists the VERP return path (an MX at bounces.<domain>) when a mailbox of the account on the domain uses VERP, as advice', async () => {
  const account = await makeAccount();
  await createMailbox(db(), { account: account.id, address: 'out@verp.test', smtp: sink.url, imap: 'imap://u:p@imap.relay.test:143', return_path: 'verp' });
  const { body } = await admin().post('/admin/api/domains').send({ account: account.id, name: 'verp.test' });
  const mx = body.domain.records.find((r: { purpose: string }) => r.purpose === 'return_path');
  expect(mx).toMatchObject({ type: 'MX', host: 'bounces.verp.test', name: 'bounces', value: '10 imap.relay.test', required: false, status: 'missing' });
  await dns.publish([...published(body.domain.records.filter((r: { purpose: string }) => r.purpose !== 'return_path')), { type: 'MX', host: 'bounces.verp.test', target: 'mx.elsewhere.test' }]);
  const wrong = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  expect(wrong.body.domain.status).toBe('verified');
  expect(wrong.body.domain.records.find((r: { purpose: string }) => r.purpose === 'return_path')).toMatchObject({ status: 'wrong', seen: ['10 mx.elsewhere.test'], problem: 'the MX should name imap.relay.test' });
  await dns.publish(published(body.domain.records));
  const found = await admin().post(`/admin/api/domains/${body.domain.id}/verify`);
  expect(found.body.domain.records.find((r: { purpose: string }) => r.purpose === 'return_path')).toMatchObject({ status: 'found' });
});
