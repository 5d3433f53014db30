import type { Mailbox } from '../../../../generated/prisma/client';
import type { Db } from '../db';
import { releaseWaiting } from './state';
import { forgetAccessToken } from './tokens';

/**
 * What follows a written change of a mailbox's sign-in (mailbox-settings/'s updateMailbox, connect.ts's reconnect):
 * connected again (a new refresh token, or back to a password), its waiting mail goes out, once; new OAuth2 settings
 * (another refresh token, client or endpoint), the cached access token is not theirs and is forgotten.
 */
export async function signInChanged(db: Db, before: Mailbox, after: Mailbox, authChanged: boolean): Promise<void> {
  if (before.authStatus === 'needs_reconnect' && after.authStatus === 'active') {
    await forgetAccessToken(after.id).catch(() => undefined);
    await releaseWaiting(db, after.id);
  } else if (authChanged) await forgetAccessToken(after.id).catch(() => undefined);
}
