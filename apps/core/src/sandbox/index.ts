import type { Tx } from '../db';
import { Forbidden, NotFound } from '../errors';
import { sandboxCopy } from './repository';

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
