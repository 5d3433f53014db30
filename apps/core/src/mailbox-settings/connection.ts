import type { Db } from '../db';
import { checkImap, checkSmtp } from './check';
import { findMailbox } from '../mailboxes';

export type ConnectionCheck = { ok: boolean; message: string };

export interface ConnectionTest {
  address: string;
  smtp: ConnectionCheck | null;
  /** null when the mailbox has no imap settings, or when IMAP was not asked for */
  imap: ConnectionCheck | null;
}

/**
 * A mailbox's connection test (admin API, console, CLI): logs in to its SMTP server and, when it has one, its IMAP
 * server; nothing is sent. A server that refuses is an answer about the mailbox (`ok: false` with the server's words),
 * not a failure of the call. `parts` narrows the test to one side (the console's two buttons).
 */
export async function testMailbox(db: Db, id: number, parts: readonly ('smtp' | 'imap')[] = ['smtp', 'imap']): Promise<ConnectionTest> {
  const mailbox = await findMailbox(db, id);
  const [smtp, imap] = await Promise.all([parts.includes('smtp') ? checkSmtp(mailbox, db) : null, parts.includes('imap') ? checkImap(mailbox, db) : null]);
  return { address: mailbox.address, smtp, imap };
}
