import type { Db } from '../db';
import { mailboxView, writeMailboxChange, type MailboxChange, type MailboxView } from '../mailboxes';
import { signInChanged } from '../oauth/reconnect';
import { replanHeldSteps } from '../outreach/replan';

/**
 * PATCH /admin/api/mailboxes/:id (the admin API, the console and the CLI alike): the row's change (mailboxes/index.ts
 * writeMailboxChange), then what follows it beyond the row: the sign-in's (oauth/reconnect.ts) and, when the limits
 * changed, the steps held by the mailbox's cap or gap planned again under the new limits (docs/outreach.md). Here, above
 * mailboxes, oauth and outreach, so that mailboxes imports neither.
 */
export async function updateMailbox(db: Db, id: number, change: MailboxChange): Promise<MailboxView> {
  const { before, after } = await writeMailboxChange(db, id, change);
  await signInChanged(db, before, after, change.auth !== undefined);
  const limits = [change.daily_limit, change.gap_seconds, change.gap_jitter, change.warmup];
  if (limits.some((l) => l !== undefined)) await replanHeldSteps(db, { mailboxId: id });
  return mailboxView(after);
}
