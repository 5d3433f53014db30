import type { Mailbox } from '../../../../generated/prisma/client';
import { afterCommit } from '../after-commit';
import type { Db } from '../db';
import { releaseWaiting } from './state';
import { forgetAccessToken } from './tokens';

/**
 * What follows a written change of a mailbox's sign-in (mailbox-settings/'s updateMailbox, connect.ts's reconnect):
 * connected again (a new refresh token, or back to a password), its waiting mail goes out, once; new OAuth2 settings
 * (another refresh token, client or endpoint), the cached access token is not theirs and is forgotten (in Redis, once
 * the change has committed: after-commit.ts).
 */
export async function signInChanged(db: Db, before: Mailbox, after: Mailbox, authChanged: boolean): Promise<void> {
  if (before.authStatus === 'needs_reconnect' && after.authStatus === 'active') {
    await afterCommit(db, () => forgetAccessToken(after.id).catch(() => undefined));
    await releaseWaiting(db, after.id);
  } else if (authChanged) await afterCommit(db, () => forgetAccessToken(after.id).catch(() => undefined));
}
