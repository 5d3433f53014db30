import type { List } from '../../../../generated/prisma/client';
import { config } from '../config';
import { randomBase62 } from '../crypto';
import type { Tx } from '../db';
import { NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { requireMailbox } from '../mailboxes';

/** The List of docs/api.md. */
export interface ListView {
  key: string;
  name: string;
  confirm: boolean;
  subscribers: number;
}

export function listView(list: List): ListView {
  return { key: list.key, name: list.name, confirm: list.confirm, subscribers: list.subscriberCount };
}

/** The hosted sign-up form of a list (apps/api/src/routes/pages.ts, `/f/:key`), under PUBLIC_URL. */
export function formUrl(key: string): string {
  return `${config().publicUrl}/f/${encodeURIComponent(key)}`;
}

/** A list as the operator sees it (admin API, CLI): the public view, its ids and its form's address. */
export type AdminListView = ListView & { id: number; account: number; mailbox: number; form_url: string };

function adminListView(list: List): AdminListView {
  return { id: list.id, account: list.accountId, mailbox: list.mailboxId, ...listView(list), form_url: formUrl(list.key) };
}

export interface NewList {
  account: number;
  name: string;
  confirm: boolean;
  mailbox: number;
}

export async function createList(db: Tx, input: NewList): Promise<AdminListView> {
  await requireAccount(db, input.account);
  await requireMailbox(db, input.account, input.mailbox);
  const list = await db.list.create({
    data: {
      accountId: input.account,
      mailboxId: input.mailbox,
      name: input.name,
      confirm: input.confirm,
      key: randomBase62(20),
    },
  });
  return adminListView(list);
}

export async function listLists(db: Tx, account: number): Promise<ListView[]> {
  const lists = await db.list.findMany({ where: { accountId: account }, orderBy: { id: 'asc' } });
  return lists.map(listView);
}

/** One list as the operator sees it. */
export async function getList(db: Tx, id: number): Promise<AdminListView> {
  const list = await db.list.findUnique({ where: { id } });
  if (!list) throw new NotFound(`no list with id ${id}`);
  return adminListView(list);
}

export interface ListChanges {
  name?: string;
  confirm?: boolean;
  mailbox?: number;
}

/** PATCH /admin/api/lists/:id: name, double opt-in, the mailbox that sends its emails (of the same account); never the key. */
export async function changeList(db: Tx, id: number, changes: ListChanges): Promise<AdminListView> {
  const list = await db.list.findUnique({ where: { id } });
  if (!list) throw new NotFound(`no list with id ${id}`);
  if (changes.mailbox !== undefined) await requireMailbox(db, list.accountId, changes.mailbox);
  const updated = await db.list.update({ where: { id }, data: { name: changes.name, confirm: changes.confirm, mailboxId: changes.mailbox } });
  return adminListView(updated);
}
