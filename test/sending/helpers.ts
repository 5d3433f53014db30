import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { enqueueDelivery, storeMessages, type OutgoingEmail } from '../../apps/core/src/delivery/outbox';
import { writeSends, type SendToWrite } from '../../apps/core/src/sending/write';
import type { Tenant } from '../helpers/factories';
import { waitFor } from '../helpers/wait';

/** One email written and queued the way other features do it (storeMessages + enqueueDelivery). */
export async function queueEmail(tenant: Tenant, overrides: Partial<OutgoingEmail> = {}): Promise<string> {
  const email: OutgoingEmail = {
    accountId: tenant.account.id,
    mailboxId: tenant.mailbox.id,
    fromAddress: tenant.mailbox.address,
    kind: 'confirmation',
    to: 'reader@example.org',
    subject: 'Please confirm',
    text: 'Follow the link',
    ...overrides,
  };
  const [row] = await db().$transaction((tx) => storeMessages(tx, [email]));
  await enqueueDelivery(db(), [{ id: row!.id, notBefore: email.notBefore }]);
  return row!.id;
}

/** A send as the accept path hands it to writeSends: subject "Batch", text only, the key's limit as given. */
export function sendToWrite(tenant: Tenant, to: string[], options: { dailyLimit?: number; idempotencyRecord?: number } = {}): SendToWrite {
  return {
    key: { id: tenant.keyId, accountId: tenant.account.id, dailyLimit: options.dailyLimit ?? 1000 },
    mailbox: { id: tenant.mailbox.id, address: tenant.mailbox.address },
    request: { to, subject: 'Batch', text: 'Hello', html: null, fromName: 'Sender', replyTo: null, headers: {}, attachments: [], sendAt: null, metadata: {} },
    sendId: crypto.randomUUID(),
    idempotencyRecord: options.idempotencyRecord,
  };
}

/** Transactional copies written as the API writes them, not queued: recipient -> message id. */
export async function writtenCopies(tenant: Tenant, to: string[]): Promise<Map<string, string>> {
  const [written] = await writeSends(db(), [sendToWrite(tenant, to)]);
  return new Map(written!.kept.map((k) => [k.to, k.id]));
}

/** A message row written but not queued, for tests that queue or run it themselves. */
export async function insertMessage(tenant: Tenant, to: string) {
  const [row] = await db().$transaction((tx) =>
    storeMessages(tx, [{ accountId: tenant.account.id, mailboxId: tenant.mailbox.id, fromAddress: tenant.mailbox.address, kind: 'confirmation', to, subject: 'Hello', text: 'Hi' }]),
  );
  return { id: row!.id };
}

export async function waitForStatus(messageId: string, statuses: string[], timeout = 15_000) {
  return waitFor(
    async () => {
      const row = await db().message.findUniqueOrThrow({ where: { id: messageId } });
      return statuses.includes(row.status) ? row : null;
    },
    { timeout, what: `message ${messageId} to be ${statuses.join(' or ')}` },
  );
}

export interface OwnProcess {
  child: ChildProcess;
  stdout: () => string;
  exited: Promise<number | null>;
}

/**
 * A TypeScript file of the project run as ONE node process (`node --import tsx`), so that killing it kills the code
 * itself (the tsx CLI would leave its child running after a SIGKILL).
 */
export function runProcess(entry: string, env: NodeJS.ProcessEnv = {}): OwnProcess {
  const root = path.resolve(__dirname, '../..');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, entry)], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, exited };
}
