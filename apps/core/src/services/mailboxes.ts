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
  if (port < 1) throw new BadRequest('smtp must name a port from 1 to 65535');
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    secure,
    user: decodeUserinfo(url.username, 'user name'),
    password: decodeUserinfo(url.password, 'password'),
  };
}

function decodeUserinfo(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new BadRequest(`smtp: the ${what} has a bad %-escape (write % as %25)`);
  }
}

export interface MailboxView {
  id: number;
  account: number;
  address: string;
  name: string;
  smtp: { host: string; port: number; secure: boolean; user: string };
  daily_limit: number;
  gap_seconds: number;
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
  };
}

export interface NewMailbox {
  account: number;
  address: string;
  name?: string;
  smtp: string;
  daily_limit?: number;
  gap_seconds?: number;
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
