import type { Request, Response, Router } from 'express';
import type { Db } from '../../../core/src/db';
import type { Reads } from '../../../core/src/replicas';
import type { AccountScope } from '../../../core/src/account-scope';
import { can, type Member, type Permission } from '../../../core/src/teams';
import type { EmailKinds } from '../../../core/src/delivery/kinds';

/**
 * One page (or resource) of the console: its templates and its routes. A new page is a module exporting a ConsolePage
 * and one line in PAGES (index.ts); its forms post to its own paths and carry `it.csrf` (checked for every POST).
 */
export interface ConsolePage {
  /** under /admin: '/accounts' */
  path: string;
  title: string;
  /** what a person needs to see the page in the navigation (teams/permissions.ts); `read` when not said */
  permission?: Permission;
  /** named templates, rendered as `@name` inside the layout */
  templates: Record<string, string>;
  routes(router: Router, ctx: PageContext): void;
}

export interface PageContext {
  db: Db;
  /** where the message search and the charts read: a replica with DATABASE_READ_URL (replicas/), else the primary */
  reads: Reads;
  /** the kinds of email, for composing a message as it went out (its story's headers) */
  kinds: EmailKinds;
  /** renders `@template` in the layout with the session's CSRF token, the navigation and any flash message */
  render(req: Request, res: Response, template: string, title: string, data?: Record<string, unknown>, status?: number): void;
  /** a message for the next page, then a redirect (POST, redirect, GET) */
  redirect(req: Request, res: Response, to: string, flash: string): Promise<void>;
}

/**
 * The accounts a console listing shows (docs/teams.md), as the admin API's `scopeOf`: a signed-in person's accounts
 * where they hold `permission`; every account (undefined) for the admin token and an operator.
 */
export function viewScope(res: Response, permission: Permission = 'read'): AccountScope {
  const user = res.locals.session?.user as Member | undefined;
  if (!user || user.operator) return undefined;
  return [...user.roles.keys()].filter((id) => can(user, permission, id));
}

/** A listing's filter on one account, held to the scope (account-scope.ts). */
export { narrow } from '../../../core/src/account-scope';

/** Form fields as strings: urlencoded bodies, one value per name. */
export function field(req: Request, name: string): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value.trim() : '';
}

/**
 * A GET form's query for its resource's own schema (the folder's schema.ts, the admin API's rules): a form sends each of
 * its fields, an empty one as '', which the API's rules refuse; those are left out, as a request that did not give them.
 */
export function formQuery(req: Request): Record<string, unknown> {
  return Object.fromEntries(Object.entries(req.query).filter(([, value]) => !(typeof value === 'string' && value.trim() === '')));
}

export const query = (req: Request, name: string): string => {
  const value = req.query[name];
  return typeof value === 'string' ? value.trim() : '';
};

/** A form number, or undefined when blank (so the joi schema names the missing field). */
export const numberField = (req: Request, name: string): number | undefined => {
  const raw = field(req, name);
  return raw === '' ? undefined : Number(raw);
};
