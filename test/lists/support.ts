import { withConfirmationLink } from '../../apps/core/src/subscribers/confirm-link';
import { db } from '../../apps/core/src/db';
import type { ApiApp } from '../../apps/api/src/app';
import { as } from '../helpers/api';
import { makeList, makeTenant, type Tenant } from '../helpers/factories';

/** A tenant with one list and a client for its key. */
export async function listFixture(api: ApiApp, options: { confirm?: boolean; smtp?: string; name?: string } = {}) {
  const tenant: Tenant = await makeTenant({ smtp: options.smtp });
  const list = await makeList(tenant.account.id, tenant.mailbox.id, { confirm: options.confirm ?? true, name: options.name });
  const client = as(api, tenant.token);
  return {
    tenant,
    list,
    client,
    subscribe: (body: Record<string, unknown>) => client.post('/api/v1/subscribers').send({ list: list.key, ...body }),
    unsubscribe: (body: Record<string, unknown>) => client.delete('/api/v1/subscribers').send({ list: list.key, ...body }),
    count: async () => (await db().list.findUniqueOrThrow({ where: { id: list.id } })).subscriberCount,
    subscriber: (email: string) => db().subscriber.findUnique({ where: { listId_email: { listId: list.id, email } } }),
  };
}

/** The active subscribers counted the slow way, to check the stored count against. */
export const activeRows = (listId: number) => db().subscriber.count({ where: { listId, status: 'active' } });

export const confirmationMessages = (to: string) =>
  db().message.findMany({ where: { to, kind: 'confirmation' }, orderBy: { createdAt: 'asc' } });

/** The token of a stored confirmation email, as the worker writes it into the email on the wire (confirm-link.ts). */
export function tokenOfStored(message: { id: string; text: string | null }): string {
  return tokenFrom(withConfirmationLink(message.text, message.id));
}

export function tokenFrom(text: string | null | undefined): string {
  const match = /http:\/\/mail\.test\/confirm\/([0-9A-Za-z]+)/.exec(text ?? '');
  if (!match) throw new Error(`no confirmation link in: ${text}`);
  return match[1]!;
}

let n = 0;
export const address = (label = 'person') => `${label}-${process.pid}-${Date.now().toString(36)}-${n++}@example.org`;
