import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dkimSign } from 'mailauth/lib/dkim/sign';
import type { ApiApp } from '../../apps/api/src/app';
import { config } from '../../apps/core/src/config';
import { createDb, db, type Db } from '../../apps/core/src/db';
import { checkResolver } from '../../apps/core/src/domains/resolver';
import { mxResolver } from '../../apps/core/src/mx/auth';
import { Mx, type MxSettings } from '../../apps/core/src/mx/server';
import { submissionTls } from '../../apps/core/src/submission/tls';
import { asAdmin } from '../helpers/api';
import type { DnsServer } from '../helpers/dns-server';
import { makeAccount } from '../helpers/factories';

/**
 * The MX on a loopback port for the file's tests, wired as apps/mx's main wires it, resolving through the file's
 * dnsmasq, scoring with rspamd when RSPAMD_URL is set. `settings` change its bounds (a small MX_MAX_BYTES); `database` a URL of its own (a proxy the
 * test cuts).
 */
export function useMx(dns: DnsServer, settings: Partial<MxSettings> & { database?: () => string } = {}) {
  const holder: { mx?: Mx; port?: number; db?: Db } = {};
  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mx-tls-'));
    const tls = submissionTls({ tlsCert: null, tlsKey: null, name: 'mx.test' }, dir);
    holder.db = settings.database ? createDb(settings.database()) : db();
    const resolver = mxResolver(checkResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000 }).raw);
    holder.mx = new Mx(
      { db: holder.db, resolver },
      { port: 0, host: '127.0.0.1', hostname: 'mx.test', maxBytes: 26_214_400, rspamdUrl: config().mx.rspamdUrl, maxConnections: 1000, idleTimeoutSeconds: 60, returnPathHost: '', tls, requireMxRecord: true, ...settings },
    );
    holder.port = await holder.mx.listen();
  });
  afterAll(async () => {
    await holder.mx?.close();
    if (settings.database) await holder.db?.$disconnect().catch(() => undefined);
  });
  return {
    get port() {
      return holder.port!;
    },
  };
}

/** An account with a verified domain turned inbound through the admin API, its MX record found, and routes on it. */
export async function inboundDomain(api: ApiApp, name: string, routes: { match: string; action: string; spam_threshold?: number; endpoint?: number }[], owner?: { id: number }) {
  const account = owner ?? (await makeAccount());
  const domain = await db().domain.create({ data: { accountId: account.id, name, status: 'verified', verifiedAt: new Date() } });
  const patched = await asAdmin(api).patch(`/admin/api/domains/${domain.id}`).send({ inbound: true });
  if (patched.status !== 200) throw new Error(`inbound not set: ${patched.status} ${JSON.stringify(patched.body)}`);
  // as a check that found its MX record leaves it (test/mx/mx-record.test.ts finds it through DNS)
  await db().domain.update({ where: { id: domain.id }, data: { inboundMxFoundAt: new Date() } });
  const made = [];
  for (const r of routes) {
    const res = await asAdmin(api).post('/admin/api/routes').send({ account: account.id, domain: name, ...r });
    if (res.status !== 201) throw new Error(`route not made: ${res.status} ${JSON.stringify(res.body)}`);
    made.push(res.body.route as { id: number });
  }
  return { account, domain, routes: made };
}

/** A DKIM key pair for `domain` with selector `sel`, and its TXT record's value. */
export function dkimKey() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  };
}

/** A message as a sender writes it (CRLF lines), DKIM-signed with mailauth when a key is given. */
export async function message(headers: Record<string, string>, body: string, sign?: { domain: string; selector: string; privateKey: string }): Promise<string> {
  const raw = `${Object.entries({ 'Message-ID': `<${crypto.randomUUID()}@sender.test>`, Date: new Date().toUTCString(), 'MIME-Version': '1.0', 'Content-Type': 'text/plain; charset=utf-8', ...headers })
    .map(([k, v]) => `${k}: ${v}`)
    .join('\r\n')}\r\n\r\n${body.replace(/\r?\n/g, '\r\n')}\r\n`;
  return sign ? (await signed(Buffer.from(raw), sign)).toString() : raw;
}

/** A message with one attachment (application/octet-stream) as a mail client writes it: nodemailer's MailComposer. */
export function withAttachment(fields: { from: string; to: string; subject: string; text: string; inReplyTo?: string }, attachment: { filename: string; content: Buffer }): Promise<Buffer> {
  return new MailComposer({ ...fields, attachments: [{ ...attachment, contentType: 'application/octet-stream' }] }).compile().build();
}

/** `raw` with a DKIM-Signature made by mailauth in front. */
export async function signed(raw: Buffer, sign: { domain: string; selector: string; privateKey: string }): Promise<Buffer> {
  // mailauth signs with `signatureData` (its types name only the older top-level fields, which sign nothing in 4.13)
  const options = { canonicalization: 'relaxed/relaxed', algorithm: 'rsa-sha256', signatureData: [{ signingDomain: sign.domain, selector: sign.selector, privateKey: sign.privateKey }] };
  const result = await dkimSign(raw, options as unknown as Parameters<typeof dkimSign>[1]);
  return Buffer.concat([Buffer.from(result.signatures), raw]);
}

/** Sends one message to the MX on `port` (from ann@plain.test unless said) and answers the stored id from its 250. */
export async function sendToMx(port: number, to: string, subject: string, body = subject, from = 'ann@plain.test'): Promise<string> {
  const info = await nodemailer
    .createTransport({ host: '127.0.0.1', port, secure: false, tls: { rejectUnauthorized: false } })
    .sendMail({ envelope: { from, to: [to] }, raw: await message({ From: from, To: to, Subject: subject }, body) });
  return /OK: ([0-9a-f-]{36})/.exec(info.response)![1]!;
}
