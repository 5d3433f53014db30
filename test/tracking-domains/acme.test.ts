import http from 'node:http';
import net from 'node:net';
import request from 'supertest';
import type https from 'node:https';
import { createTrackingServer } from '../../apps/api/src/https';
import { db, rawQuery } from '../../apps/core/src/db';
import { recheckDueTrackingDomains } from '../../apps/core/src/tracking-domains/schedule';
import { maintenanceTasks } from '../../apps/worker/src/processors/maintenance';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { asAdmin, useApi } from '../helpers/api';
import { DnsServer, type ZoneRecord } from '../helpers/dns-server';
import { useMail } from '../helpers/mail';
import { Pebble } from '../helpers/pebble';
import { freePort, runTs, waitForHttp } from '../helpers/processes';
import { waitFor } from '../helpers/wait';
import { addSubscriber, broadcastTenant, waitStatus } from '../broadcasts/support';
import { getOver, handshake } from './support';

/**
 * docs/tracking-domains.md end to end: Debian's pebble as the CA, dnsmasq as DNS (pebble resolves the names it checks
 * through it too), the API on the port pebble's HTTP-01 checks connect to, and its HTTPS listener serving by SNI.
 */
const zone: ZoneRecord[] = [
  { type: 'A', host: 'track.mail.test', address: '127.0.0.1' },
  { type: 'CNAME', host: 'track.brand.test', target: 'track.mail.test' },
  { type: 'CNAME', host: 'track.later.test', target: 'track.mail.test' },
];
const dns = new DnsServer(['test']);
const ports = { http: 0, https: 0 };
const holder: { pebble?: Pebble } = {};
const pebble = () => holder.pebble!;
/** the root that signed the first test's certificate (pebble's root changes when it restarts) */
const roots: { first?: string } = {};

// before anything reads the configuration (the API, the mail workers)
beforeAll(async () => {
  ports.http = await freePort();
  ports.https = await freePort();
  await dns.start(zone);
  holder.pebble = new Pebble({ httpPort: ports.http, dnsServer: dns.address });
  await pebble().reserve();
  Object.assign(process.env, {
    DNS_SERVERS: dns.address,
    TRACK_HOSTNAME: 'track.mail.test',
    HTTPS_PORT: String(ports.https),
    ACME_DIRECTORY_URL: pebble().directoryUrl,
    ACME_CA_FILE: pebble().caFile,
    ACME_CAA_IDENTITIES: 'pebble.letsencrypt.org',
    ACME_RETRY_BASE_MS: '60000',
  });
});
afterAll(async () => {
  await pebble().stop();
  await dns.stop();
});

const sink = useMail({ queues: ['delivery', 'broadcast'] });
const app = useApi();
const admin = () => asAdmin(app.api);
const servers: { http?: http.Server; https?: https.Server } = {};
beforeAll(async () => {
  servers.http = http.createServer(app.api.app);
  await new Promise<void>((resolve) => servers.http!.listen(ports.http, '127.0.0.1', resolve));
  // read from Postgres at every handshake here, so a renewal or an expiry shows at once (the API keeps them 60 s)
  servers.https = createTrackingServer(app.api.app, db(), { refreshMs: 0 });
  await new Promise<void>((resolve) => servers.https!.listen(ports.https, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const server of [servers.http, servers.https]) {
    if (!server) continue;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);

/** A tracked broadcast to one reader; the email's html. */
async function trackedEmail(t: Awaited<ReturnType<typeof broadcastTenant>>, to: string): Promise<{ html: string; id: number }> {
  await addSubscriber(t.listId, to);
  const created = await admin().post('/admin/api/broadcasts').send({ list: t.list.key, subject: `For ${to}`, html: '<p><a href="https://shop.example/sale">Sale</a></p>', track_clicks: true, track_opens: true });
  expect(created.status).toBe(201);
  const id = created.body.broadcast.id as number;
  await admin().patch(`/admin/api/broadcasts/${id}`).send({ status: 'sending' });
  await waitStatus(id, 'sent');
  // a person, not a mail filter's scanner: the click comes a minute after delivery
  await rawQuery(db(), `UPDATE messages SET sent_at = now() - interval '1 minute' WHERE broadcast_id = $1`, [id]);
  return { html: sink.to(to)[0]!.parsed.html as string, id };
}

it('an ACME server that is down leaves the domain retrying with backoff, its status readable; once it is back the certificate is issued', async () => {
  const t = await broadcastTenant(sink.url);
  const added = await admin().post('/admin/api/tracking-domains').send({ account: t.account.id, name: 'track.later.test' });
  expect(added.status).toBe(201);
  const id = added.body.tracking_domain.id as number;

  const first = await admin().post(`/admin/api/tracking-domains/${id}/verify`);
  expect(first.body.tracking_domain).toMatchObject({ status: 'retrying', attempts: 1, seen: ['track.mail.test'], live: false, certificate: null });
  expect(first.body.tracking_domain.reason).toMatch(/^the ACME server did not answer \(ECONNREFUSED\); attempt 1, next at /);
  const wait1 = Date.parse(first.body.tracking_domain.next_check_at) - Date.now();
  expect(wait1).toBeGreaterThan(50_000);
  expect(wait1).toBeLessThanOrEqual(60_000);
  // the schedule does not try before its time
  expect(await recheckDueTrackingDomains(db())).toBe(0);

  const second = await admin().post(`/admin/api/tracking-domains/${id}/verify`);
  expect(second.body.tracking_domain).toMatchObject({ status: 'retrying', attempts: 2 });
  const wait2 = Date.parse(second.body.tracking_domain.next_check_at) - Date.now();
  expect(wait2).toBeGreaterThan(230_000); // four times longer
  expect(wait2).toBeLessThanOrEqual(240_000);

  await pebble().start();
  // its time comes: the worker's task orders it
  await rawQuery(db(), 'UPDATE tracking_domains SET next_check_at = now() WHERE id = $1', [id]);
  expect(await recheckDueTrackingDomains(db())).toBe(1);
  const issued = await admin().get(`/admin/api/tracking-domains/${id}`);
  expect(issued.body.tracking_domain).toMatchObject({ status: 'active', attempts: 0, reason: null, live: true });
  roots.first = await pebble().root();
  const served = await handshake(ports.https, 'track.later.test', roots.first);
  expect(served).toMatchObject({ ok: true, names: 'DNS:track.later.test' });
  expect(await db().acmeAccount.findFirstOrThrow()).toMatchObject({ accountUrl: expect.stringMatching(/^https:\/\/127\.0\.0\.1:/) });

  // pebble restarts and forgets its accounts (and its root): the next order (the next test's) makes the account again
  await pebble().halt();
  await pebble().start();
});

it('a verified domain gets a certificate from pebble, served by SNI; its account\'s links use it and a click through it counts; its CNAME gone, links fall back until it is back; a renewal replaces the certificate; an expired one falls back to PUBLIC_URL', async () => {
  const t = await broadcastTenant(sink.url);
  const other = await broadcastTenant(sink.url);
  const added = await admin().post('/admin/api/tracking-domains').send({ account: t.account.id, name: 'Track.Brand.TEST' });
  expect(added.status).toBe(201);
  expect(added.body.tracking_domain).toMatchObject({ name: 'track.brand.test', status: 'pending', record: { type: 'CNAME', host: 'track.brand.test', value: 'track.mail.test' }, live: false });
  const id = added.body.tracking_domain.id as number;

  // the worker's task (as the worker runs it): the CNAME is there, CAA allows any CA, pebble checks HTTP-01 against this
  // API and issues
  expect(await maintenanceTasks(db())['tracking-domains']()).toBe(1);
  const active = (await admin().get(`/admin/api/tracking-domains/${id}`)).body.tracking_domain;
  expect(active).toMatchObject({ status: 'active', reason: null, seen: ['track.mail.test'], live: true });
  const notAfter = Date.parse(active.certificate.not_after);
  const renewAt = Date.parse(active.certificate.renew_at);
  // 30 days before expiry, less up to a day of jitter
  expect(notAfter - renewAt).toBeGreaterThanOrEqual(30 * 86400_000);
  expect(notAfter - renewAt).toBeLessThanOrEqual(31 * 86400_000);
  expect(JSON.stringify(active)).not.toMatch(/PRIVATE KEY|BEGIN/);
  expect((await db().trackingDomain.findUniqueOrThrow({ where: { id } })).privateKeyEnc).toMatch(/^v1:/);
  // the challenge was cleaned up
  expect(await db().acmeChallenge.count()).toBe(0);
  // one a dead order left behind a day ago is dropped by the task; a fresh one stays
  await db().acmeChallenge.createMany({ data: [{ token: 'left-behind', keyAuthorization: 'x', createdAt: new Date(Date.now() - 25 * 3600_000) }, { token: 'in-flight', keyAuthorization: 'y' }] });
  const answered = await request(app.api.app).get('/.well-known/acme-challenge/in-flight');
  expect({ status: answered.status, text: answered.text }).toEqual({ status: 200, text: 'y' });
  expect((await request(app.api.app).get('/.well-known/acme-challenge/unknown-token')).status).toBe(404);
  await recheckDueTrackingDomains(db());
  expect((await db().acmeChallenge.findMany()).map((c) => c.token)).toEqual(['in-flight']);
  await db().acmeChallenge.deleteMany();

  const root = await pebble().root();
  const served = await handshake(ports.https, 'track.brand.test', root);
  expect(served).toMatchObject({ ok: true, names: 'DNS:track.brand.test' });
  if (!served.ok) return;
  // a name without a certificate gets no handshake
  expect(await handshake(ports.https, 'track.unknown.test', root)).toMatchObject({ ok: false });

  // its expiry in /metrics
  const metrics = await admin().get('/metrics');
  expect(metrics.text).toContain(`mailservice_tracking_certificate_expiry_seconds{domain="track.brand.test"} ${notAfter / 1000}`);

  // the account's email links through its domain, the other account's through PUBLIC_URL
  const { html, id: broadcast } = await trackedEmail(t, 'ann@readers.test');
  const base = `https://track.brand.test:${ports.https}`;
  const link = hrefs(html)[0]!;
  expect(link.startsWith(`${base}/c/`)).toBe(true);
  expect(html).toContain(`<img src="${base}/o/`);
  expect(hrefs((await trackedEmail(other, 'bob@readers.test')).html)[0]).toMatch(/^http:\/\/mail\.test\/c\//);

  // a click through the tracking domain over HTTPS redirects and counts
  const click = await getOver(link, root);
  expect(click).toEqual({ status: 302, location: 'https://shop.example/sale' });
  const counted = await admin().get(`/admin/api/broadcasts/${broadcast}/links`);
  expect(counted.body.links).toEqual([{ url: 'https://shop.example/sale', unique_clicks: 1, clicks: 1, scanner_clicks: 0 }]);

  // a campaign step's links (text) too
  const campaign = await admin()
    .post('/admin/api/campaigns')
    .send({ account: t.account.id, mailbox: t.mailbox.id, name: 'Tracked', goal: 'sales', track_clicks: true, steps: [{ subject: 'Hi', body: 'See https://offer.example/deal', delay_hours: 0 }] });
  expect(campaign.status).toBe(201);
  await db().campaign.update({ where: { id: campaign.body.campaign.id }, data: { status: 'running' } });
  const prospect = await db().prospect.create({ data: { campaignId: campaign.body.campaign.id, email: 'lead@offers.test', name: 'Lee', status: 'ready', nextAt: new Date() } });
  expect((await runSequenceStep(db(), prospect.id, 1)).kind).toBe('written');
  expect((await db().message.findFirstOrThrow({ where: { prospectId: prospect.id } })).text).toMatch(new RegExp(`^See ${base}/c/\\S+$`));

  // the CNAME removed: pending, and the account's next emails link through PUBLIC_URL; back: active again, no new order
  await dns.publish(zone.filter((r) => r.host !== 'track.brand.test'));
  const gone = (await admin().post(`/admin/api/tracking-domains/${id}/verify`)).body.tracking_domain;
  expect(gone).toMatchObject({ status: 'pending', live: false, seen: [] });
  expect(hrefs((await trackedEmail(t, 'dan@readers.test')).html)[0]).toMatch(/^http:\/\/mail\.test\/c\//);
  await dns.publish(zone);
  const back = (await admin().post(`/admin/api/tracking-domains/${id}/verify`)).body.tracking_domain;
  expect(back).toMatchObject({ status: 'active', live: true, reason: null, certificate: { issued_at: active.certificate.issued_at } });

  // renewal: its time comes (renew_at), the worker orders a new certificate, and the listener serves it
  await rawQuery(db(), `UPDATE tracking_domains SET renew_at = now() - interval '1 second', next_check_at = now() WHERE id = $1`, [id]);
  expect(await recheckDueTrackingDomains(db())).toBe(1);
  const renewed = (await admin().get(`/admin/api/tracking-domains/${id}`)).body.tracking_domain;
  expect(renewed).toMatchObject({ status: 'active', live: true, reason: null, attempts: 0 });
  expect(Date.parse(renewed.certificate.issued_at)).toBeGreaterThan(Date.parse(active.certificate.issued_at));
  const after = await handshake(ports.https, 'track.brand.test', root);
  expect(after).toMatchObject({ ok: true, names: 'DNS:track.brand.test' });
  expect(after.ok && after.serial).not.toBe(served.serial);

  // expired (renewal failed for a month): the account's links fall back to PUBLIC_URL, never to a dead host
  await rawQuery(db(), `UPDATE tracking_domains SET not_after = now() - interval '1 minute' WHERE id = $1`, [id]);
  expect((await admin().get(`/admin/api/tracking-domains/${id}`)).body.tracking_domain.live).toBe(false);
  const fallback = (await trackedEmail(t, 'cid@readers.test')).html;
  expect(hrefs(fallback)[0]).toMatch(/^http:\/\/mail\.test\/c\//);
  expect(fallback).toContain('<img src="http://mail.test/o/');
  expect(await handshake(ports.https, 'track.brand.test', root)).toMatchObject({ ok: false });
});

it('the API process started with HTTPS_PORT serves the issued certificates by SNI and answers a click there (server.ts as wired)', async () => {
  const port = await freePort();
  const httpsPort = await freePort();
  const proc = runTs('apps/api/src/server.ts', [], { PORT: String(port), HTTPS_PORT: String(httpsPort) });
  try {
    await waitForHttp(proc, `http://127.0.0.1:${port}/healthz`);
    // the HTTPS port listens a moment after the HTTP one answers (a loaded host showed a refused handshake)
    await waitFor(() => listening(httpsPort), { what: 'the HTTPS listener' });
    const root = roots.first!;
    // issued in the first test, while this process did not exist: read from Postgres
    expect(await handshake(httpsPort, 'track.later.test', root)).toMatchObject({ ok: true, names: 'DNS:track.later.test' });
    expect(await handshake(httpsPort, 'track.unknown.test', root)).toMatchObject({ ok: false });
    expect(await getOver(`https://track.later.test:${httpsPort}/c/not-a-token`, root)).toMatchObject({ status: 404 });
  } finally {
    proc.child.kill('SIGTERM');
  }
  expect(await proc.exited).toBe(0);
}, 60_000);

/** Whether a TCP connection to the port on loopback is accepted. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
