/**
 * The accounts a listing covers (docs/teams.md): the one a request names, the several a person belongs to when it
 * names none, or every account (undefined: the admin token's and an operator's listing).
 */
export type AccountScope = number | readonly number[] | undefined;

/** A filter on one account, held to the scope: that account when the scope holds it, else none (no rows). */
export function narrow(scope: AccountScope, account: number | undefined): AccountScope {
  if (account === undefined) return scope;
  if (scope === undefined || scope === account || (Array.isArray(scope) && scope.includes(account))) return account;
  return [];
}

/** The Prisma condition on `accountId` for a scope. */
export function accountWhere(scope: AccountScope): { accountId?: number | { in: number[] } } {
  if (scope === undefined) return {};
  return typeof scope === 'number' ? { accountId: scope } : { accountId: { in: [...scope] } };
}
