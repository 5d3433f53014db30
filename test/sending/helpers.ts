import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Worker } from 'bullmq';
import { db } from '../../apps/core/src/db';
import { enqueueDelivery, storeMessages, type OutgoingEmail } from '../../apps/core/src/delivery/outbox';
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
