/**
 * The one permission table (docs/teams.md): which role may do what. The admin API answers 403 "needs <permission>"
 * from it, and the console shows a page, or takes a form, from the same table (`permissionFor`).
 */
export const ACCOUNT_ROLES = ['owner', 'admin', 'sender', 'viewer'] as const;
export type AccountRole = (typeof ACCOUNT_ROLES)[number];
/** `operator` is instance-wide; the others are held in one account each */
export const ROLES = ['operator', ...ACCOUNT_ROLES] as const;
export type Role = (typeof ROLES)[number];

const ALL: readonly AccountRole[] = ACCOUNT_ROLES;
const OWNER_ADMIN: readonly AccountRole[] = ['owner', 'admin'];
const SENDING: readonly AccountRole[] = ['owner', 'admin', 'sender'];

/** permission -> the account roles that hold it; an operator holds every one, in every account */
export const PERMISSIONS = {
  /** instance-wide: accounts, the queues, metrics, operators */
  'instance.manage': [],
  'users.manage': ['owner'],
  'keys.manage': OWNER_ADMIN,
  'domains.manage': OWNER_ADMIN,
  'mailboxes.manage': OWNER_ADMIN,
  'webhooks.manage': OWNER_ADMIN,
  'send': SENDING,
  'templates.manage': SENDING,
  'lists.manage': SENDING,
  'broadcasts.manage': SENDING,
  'campaigns.manage': SENDING,
  /** the audit log of the account */
  'audit.read': OWNER_ADMIN,
  'read': ALL,
} as const satisfies Record<string, readonly AccountRole[]>;
export type Permission = keyof typeof PERMISSIONS;

/** What a path's first segment is about, under /admin/api and under the console's /admin alike. */
const RESOURCES: Record<string, Permission> = {
  accounts: 'instance.manage',
  users: 'users.manage',
  keys: 'keys.manage',
  sandbox: 'keys.manage',
  domains: 'domains.manage',
  'tracking-domains': 'domains.manage',
  mailboxes: 'mailboxes.manage',
  webhooks: 'webhooks.manage',
  templates: 'templates.manage',
  lists: 'lists.manage',
  imports: 'lists.manage',
  suppressions: 'lists.manage',
  broadcasts: 'broadcasts.manage',
  campaigns: 'campaigns.manage',
  'stop-list': 'campaigns.manage',
  inbound: 'campaigns.manage',
  messages: 'send',
  /** a person's own second factor */
  security: 'read',
};

/** What reading needs where `read` is not enough (the whole service's delivery counts are the operator's). */
const READS: Record<string, Permission> = { audit: 'audit.read', 'audit.ndjson': 'audit.read', users: 'users.manage', delivery: 'instance.manage' };

/**
 * The permission a request needs: reading needs `read`; a change needs its resource's permission (a resource not in
 * the table: `instance.manage`, so a new one is the operator's until the table names it).
 */
export function permissionFor(method: string, path: string): Permission {
  const first = path.split('/').filter(Boolean)[0] ?? '';
  if (method === 'GET' || method === 'HEAD') return READS[first] ?? 'read';
  return RESOURCES[first] ?? 'instance.manage';
}

/** A person signed in, as a request sees them: loaded afresh on every request, so a change of role applies at once. */
export interface Member {
  id: number;
  email: string;
  name: string;
  operator: boolean;
  /** account id -> role */
  roles: Map<number, AccountRole>;
}

/**
 * Whether `member` holds `permission`: in `account` when one is named, else in at least one of their accounts.
 */
export function can(member: Member, permission: Permission, account?: number): boolean {
  if (member.operator) return true;
  const holders = PERMISSIONS[permission] as readonly AccountRole[];
  if (account !== undefined) {
    const role = member.roles.get(account);
    return role !== undefined && holders.includes(role);
  }
  for (const role of member.roles.values()) if (holders.includes(role)) return true;
  return false;
}
