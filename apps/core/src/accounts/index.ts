import type { AccountScope } from '../account-scope';
import { audited, type AuditContext } from '../audit';
import type { Db, Tx } from '../db';
import { NotFound } from '../errors';

export interface AccountView {
  id: number;
  name: string;
}

export async function createAccount(db: Tx, input: { name: string }): Promise<AccountView> {
  const account = await db.account.create({ data: { name: input.name } });
  return { id: account.id, name: account.name };
}

/** Creates an account, with its audit entry in the same transaction. */
export async function createAccountAudited(db: Db, input: { name: string }, audit: AuditContext): Promise<AccountView> {
  return audited(db, audit, { action: 'create', resource: 'account', after: (a) => a, account: (a) => a.id }, (tx: Tx) => createAccount(tx, input));
}

/** Every account, or the scope's (a person's in the console: docs/teams.md). */
export async function listAccounts(db: Tx, scope?: AccountScope): Promise<AccountView[]> {
  const accounts = await db.account.findMany({ where: scope === undefined ? {} : { id: typeof scope === 'number' ? scope : { in: [...scope] } }, orderBy: { id: 'asc' } });
  return accounts.map((a) => ({ id: a.id, name: a.name }));
}

export async function requireAccount(db: Tx, id: number): Promise<void> {
  const found = await db.account.findUnique({ where: { id }, select: { id: true } });
  if (!found) throw new NotFound(`no account with id ${id}`);
}
