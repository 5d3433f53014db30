import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import type { OAuthLogin } from '../mailboxes/oauth-login';

/**
 * How delivery signs in to a mailbox's server other than with its password: the OAuth2 login of a mailbox that signs in
 * with OAuth2, else undefined. Handed in at start (oauth/tokens.ts's oauthLoginOf, by core/src/email-kinds.ts), so
 * delivery imports no sign-in scheme.
 */
export type MailboxLogins = (db: Db, mailbox: Mailbox) => OAuthLogin | undefined;

/** The mailbox cannot sign in until someone connects it again: its mail waits (never failed). Thrown by its login. */
export class MailboxNeedsReconnect extends Error {
  override name = 'MailboxNeedsReconnect';
  constructor(readonly mailboxId: number, reason: string) {
    super(`mailbox ${mailboxId} needs reconnecting: ${reason}`);
  }
}

/**
 * The mailbox's login is away until `retryAt` (an OAuth2 provider's token endpoint down): its mail waits without spending
 * attempts (failure.ts's waitForProvider). An outage of the mailbox, not of each email. oauth/tokens.ts's OAuthProviderAway is one.
 */
export class MailboxLoginAway extends Error {
  override name = 'MailboxLoginAway';
  constructor(readonly mailboxId: number, readonly retryAt: number, message: string) {
    super(message);
  }
}
