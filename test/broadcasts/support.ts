import { rawQuery, db } from '../../apps/core/src/db';
import { runBroadcast } from '../../apps/core/src/broadcasts/run';
import { makeAccount, makeList, makeMailbox, wantEvents } from '../helpers/factories';
import type { ReceivedMail } from '../helpers/smtp-sink';
import { waitFor } from '../helpers/wait';

export async function broadcastTenant(smtp: string, options: { max_per_second?: number } = {}) {
  const account = await makeAccount();
  await wantEvents(account.id);
  const mailbox = await makeMailbox(account.id, { smtp });
  if (options.max_per_second) await db().mailbox.update({ where: { id: mailbox.id }, data: { maxPerSecond: options.max_per_second } });
  const list = await makeList(account.id, mailbox.id, { confirm: false, name: 'The <Weekly> & Co' });
  const row = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  return { account, mailbox, list, listId: row.id };
}

/** `count` active subscribers `prefix-<n>@<domain>` in one statement (and the list's count with them). */
export async function addActive(listId: number, count: number, prefix = 'reader', domain = 'example.org'): Promise<void> {
  await rawQuery(
    db(),
    `INSERT INTO subscribers (list_id, email, name, status, confirmed_at, fields)
     SELECT $1, $2 || '-' || n || '@' || $3, 'Reader ' || n, 'active', now(), jsonb_build_object('n', n)
     FROM generate_series(1, $4::int) AS n`,
    [listId, prefix, domain, count],
  );
  await rawQuery(db(), 'UPDATE lists SET subscriber_count = subscriber_count + $2 WHERE id = $1', [listId, count]);
}

export async function addSubscriber(listId: number, email: string, data: { name?: string; tags?: string[]; fields?: object; status?: string } = {}) {
  const row = await db().subscriber.create({
    data: {
      listId,
      email,
      name: data.name ?? '',
      tags: data.tags ?? [],
      fields: (data.fields ?? {}) as object,
      status: (data.status ?? 'active') as 'active',
    },
  });
  if (row.status === 'active') await db().list.update({ where: { id: listId }, data: { subscriberCount: { increment: 1 } } });
  return row;
}

/** Header lines of a raw message, unfolded, by lower-cased name (every occurrence). */
export function rawHeaders(mail: ReceivedMail): Map<string, string[]> {
  const head = mail.raw.toString('utf8').split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ');
  const out = new Map<string, string[]>();
  for (const line of head.split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at < 1) continue;
    const name = line.slice(0, at).toLowerCase();
    out.set(name, [...(out.get(name) ?? []), line.slice(at + 1).trim()]);
  }
  return out;
}

export async function waitStatus(id: number, status: string, timeout = 60_000) {
  return waitFor(
    async () => {
      const b = await db().broadcast.findUniqueOrThrow({ where: { id } });
      return b.status === status ? b : null;
    },
    { timeout, interval: 100, what: `broadcast ${id} ${status}` },
  );
}

export { runBroadcast };
