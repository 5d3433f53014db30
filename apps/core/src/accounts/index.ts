import type { Tx } from '../db';
import { NotFound } from '../errors';

export interface AccountView {
  id: number;
  name: string;
}

export async function createAccount(db: Tx, input: { name: string }): Promise<AccountView> {
  const account = await db.account.create({ data: { name: input.name } });
  return { id: account.id, name: account.name };
}

export async function listAccounts(db: Tx): Promise<AccountView[]> {
  const accounts = await db.account.findMany({ orderBy: { id: 'asc' } });
  return accounts.map((a) => ({ id: a.id, name: a.name }));
}

export async function requireAccount(db: Tx, id: number): Promise<void> {
  const found = await db.account.findUnique({ where: { id }, select: { id: true } });
  if (!found) throw new NotFound(`no account with id ${id}`);
}
