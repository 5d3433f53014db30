import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import type { SmtpSettings } from '../mailboxes';
import { accessToken } from './tokens';

/**
 * imapflow's `auth` for a mailbox: the password, or (OAuth2) `{user, accessToken}`, which imapflow sends as XOAUTH2
 * (or OAUTHBEARER when the server offers only that). `rejected`: the token the server refused last time, replaced now.
 */
export async function imapAuth(
  db: Db,
  mailbox: Mailbox,
  imap: SmtpSettings,
  rejected?: string,
): Promise<{ user: string; pass: string } | { user: string; accessToken: string }> {
  if (mailbox.authType !== 'oauth2') return { user: imap.user, pass: imap.password };
  const { token } = await accessToken(db, mailbox, { rejected });
  return { user: imap.user, accessToken: token };
}

/** Whether an imapflow error is the server refusing the login (a dead token), not the network. */
export const refusedLogin = (err: unknown): boolean => !!(err as { authenticationFailed?: boolean } | null)?.authenticationFailed;
