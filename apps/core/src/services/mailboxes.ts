import crypto from 'node:crypto';
import type { Mailbox } from '../../../../generated/prisma/client';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import type { Tx } from '../db';
import { BadRequest, Conflict, NotFound } from '../errors';
import { requireAccount } from './accounts';

export interface SmtpSettings {
  host: string;
  port: number;
  secure: boolean;
  user: string;
  password: string;
}

/** `smtp://user:pass@host:port` (STARTTLS when offered, default port 587) or `smtps://...` (TLS, default 465). */
export function parseSmtpUrl(raw: string): SmtpSettings {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BadRequest('smtp must be a URL like smtp://user:password@host:587');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new BadRequest('smtp must start with smtp:// or smtps://');
  }
  if (!url.hostname) throw new BadRequest('smtp must name a host');
  const secure = url.protocol === 'smtps:';
  const port = url.port ? Number(url.port) : secure ? 465 : 587;
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    secure,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
}

export interface MailboxView {
  id: number;
  account: number;
  address: string;
  name: string;
  smtp: { host: string; port: number; secure: boolean; user: string };
  daily_limit: number;
  gap_seconds: number;
  max_per_second: number | null;
  dkim: { domain: string; selector: string } | null;
}

/** The answer shape: never the password, not even encrypted. */
export function mailboxView(m: Mailbox): MailboxView {
  return {
    id: m.id,
    account: m.accountId,
    address: m.address,
    name: m.name,
    smtp: { host: m.smtpHost, port: m.smtpPort, secure: m.smtpSecure, user: m.smtpUser },
    daily_limit: m.dailyLimit,
    gap_seconds: m.gapSeconds,
    max_per_second: m.maxPerSecond,
    // the private key is never echoed, not even encrypted
    dkim: m.dkimDomain && m.dkimSelector ? { domain: m.dkimDomain, selector: m.dkimSelector } : null,
  };
}

export interface NewMailbox {
  account: number;
  address: string;
  name?: string;
  smtp: string;
  daily_limit?: number;
  gap_seconds?: number;
  max_per_second?: number | null;
  dkim?: DkimInput | null;
}

export interface DkimInput {
  domain: string;
  selector: string;
  private_key: string;
}

/** The DKIM columns of a mailbox: the key checked as a PEM private key, then encrypted at rest; null clears them. */
function dkimColumns(dkim: DkimInput | null) {
  if (!dkim) return { dkimDomain: null, dkimSelector: null, dkimPrivateKeyEnc: null };
  try {
    crypto.createPrivateKey(dkim.private_key);
  } catch {
    throw new BadRequest('dkim.private_key must be a PEM private key');
  }
  return { dkimDomain: dkim.domain.toLowerCase(), dkimSelector: dkim.selector, dkimPrivateKeyEnc: encryptSecret(dkim.private_key, config().secretKey) };
}

export async function createMailbox(db: Tx, input: NewMailbox): Promise<MailboxView> {
  const smtp = parseSmtpUrl(input.smtp);
  await requireAccount(db, input.account);
  const address = input.address.toLowerCase();
  const existing = await db.mailbox.findUnique({ where: { accountId_address: { accountId: input.account, address } } });
  if (existing) throw new Conflict(`the account already has a mailbox ${address}`);
  const mailbox = await db.mailbox.create({
    data: {
      accountId: input.account,
      address,
      name: input.name ?? '',
      smtpHost: smtp.host,
      smtpPort: smtp.port,
      smtpSecure: smtp.secure,
      smtpUser: smtp.user,
      smtpPasswordEnc: encryptSecret(smtp.password, config().secretKey),
      dailyLimit: input.daily_limit ?? 50,
      gapSeconds: input.gap_seconds ?? 60,
      maxPerSecond: input.max_per_second ?? null,
      ...(input.dkim ? dkimColumns(input.dkim) : {}),
    },
  });
  return mailboxView(mailbox);
}

export type MailboxChanges = Pick<NewMailbox, 'max_per_second' | 'dkim'>;

/** PATCH /admin/api/mailboxes/:id: `dkim` (null removes it) and `max_per_second` (null: no pacing). */
export async function changeMailbox(db: Tx, id: number, changes: MailboxChanges): Promise<MailboxView> {
  const existing = await db.mailbox.findUnique({ where: { id } });
  if (!existing) throw new NotFound(`no mailbox with id ${id}`);
  const mailbox = await db.mailbox.update({
    where: { id },
    data: {
      ...(changes.max_per_second !== undefined ? { maxPerSecond: changes.max_per_second } : {}),
      ...(changes.dkim !== undefined ? dkimColumns(changes.dkim) : {}),
    },
  });
  return mailboxView(mailbox);
}

export async function listMailboxes(db: Tx, account?: number): Promise<MailboxView[]> {
  const rows = await db.mailbox.findMany({ where: account ? { accountId: account } : {}, orderBy: { id: 'asc' } });
  return rows.map(mailboxView);
}

/** A mailbox of the account, or NotFound. */
export async function requireMailbox(db: Tx, account: number, id: number): Promise<Mailbox> {
  const mailbox = await db.mailbox.findFirst({ where: { id, accountId: account } });
  if (!mailbox) throw new NotFound(`no mailbox with id ${id} in account ${account}`);
  return mailbox;
}

/** nodemailer's `dkim` option with the key decrypted (worker only), covering the RFC 8058 headers; undefined without a key. */
export function dkimSettings(m: Mailbox): { domainName: string; keySelector: string; privateKey: string; headerFieldNames: string } | undefined {
  if (!m.dkimDomain || !m.dkimSelector || !m.dkimPrivateKeyEnc) return undefined;
  return {
    domainName: m.dkimDomain,
    keySelector: m.dkimSelector,
    privateKey: decryptSecret(m.dkimPrivateKeyEnc, config().secretKey),
    headerFieldNames: DKIM_HEADERS,
  };
}

/** nodemailer's default list of signed headers, plus List-Unsubscribe-Post (RFC 8058 section 4 asks both be signed). */
const DKIM_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:Resent-Message-ID:In-Reply-To:References:' +
  'List-Id:List-Help:List-Unsubscribe:List-Unsubscribe-Post:List-Subscribe:List-Post:List-Owner:List-Archive';

/** SMTP settings with the password decrypted, for the worker's transport only. */
export function smtpSettings(m: Mailbox): SmtpSettings {
  return {
    host: m.smtpHost,
    port: m.smtpPort,
    secure: m.smtpSecure,
    user: m.smtpUser,
    password: decryptSecret(m.smtpPasswordEnc, config().secretKey),
  };
}
