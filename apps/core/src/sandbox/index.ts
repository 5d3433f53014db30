import type { Tx } from '../db';
import { Forbidden, NotFound } from '../errors';
import { latestSandboxMessages, sandboxCopy, sandboxCopyOf, type SandboxRow } from './repository';

export type { SandboxRow } from './repository';

import { sandboxFate } from './sink';

export { SandboxSink, SANDBOX_DOMAIN, sandboxFate } from './sink';

/**
 * A test key (`ms_test_`, docs/sandbox.md) works on the send routes only: the others act on real people (lists,
 * subscribers, prospects, campaigns) or read the account's live mail.
 */
export function requireLiveKey(key: { mode: string }): void {
  if (key.mode === 'test') throw new Forbidden('a test key (ms_test_) works on the send routes only (docs/sandbox.md); use a live key here');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** GET /api/v1/send/:id/raw: the MIME the sandbox received for the account's message (or send of one message). */
export async function readSandboxCopy(db: Tx, accountId: number, id: string): Promise<Buffer> {
  const raw = UUID.test(id) ? await sandboxCopy(db, accountId, id) : null;
  if (!raw) throw new NotFound(`no message kept in the sandbox with id ${id} (a test key's message, once delivered; a send of one message)`);
  return Buffer.from(raw);
}

/** The console's Sandbox page: the messages test keys sent, newest first, with the fate of each recipient. */
export async function listSandbox(db: Tx, options: { limit: number; account?: number }): Promise<(SandboxRow & { fate: string })[]> {
  const rows = await latestSandboxMessages(db, options.limit, options.account ?? null);
  return rows.map((r) => ({ ...r, fate: sandboxFate(r.to) }));
}

/** One kept message's MIME for the console (any account's): 404 when the sandbox has none. */
export async function sandboxMessage(db: Tx, id: string): Promise<Buffer> {
  const raw = UUID.test(id) ? await sandboxCopyOf(db, id) : null;
  if (!raw) throw new NotFound(`the sandbox kept no message with id ${id}`);
  return Buffer.from(raw);
}
