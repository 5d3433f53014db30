import type { Tx } from '../db';

/**
 * The account of the row an admin API path names (`/<resource>/<id>/...`), for holding a person's request to it
 * (docs/teams.md): a read by id, an export, a preview or a test as much as a change. Undefined: the path names no row
 * of an account (no id, or a resource not listed here), or no such row (the route answers 404).
 */
type Owner = (db: Tx, id: string) => Promise<{ accountId: number } | null>;

const INT = /^[1-9]\d{0,9}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const account = { accountId: true } as const;
const byInt = (find: (db: Tx, id: number) => Promise<{ accountId: number } | null>): Owner => (db, id) => (INT.test(id) && Number(id) <= 2 ** 31 - 1 ? find(db, Number(id)) : Promise.resolve(null));
/** A row whose id is a bigint that carries its time (inbound emails, docs/partitions.md): up to 2^53. */
const bySafeInt = (find: (db: Tx, id: number) => Promise<{ accountId: number } | null>): Owner => (db, id) => (/^[1-9]\d{0,15}$/.test(id) && Number.isSafeInteger(Number(id)) ? find(db, Number(id)) : Promise.resolve(null));
const byUuid = (find: (db: Tx, id: string) => Promise<{ accountId: number } | null>): Owner => (db, id) => (UUID.test(id) ? find(db, id.toLowerCase()) : Promise.resolve(null));
const ofList = (list: { list: { accountId: number } } | null) => (list ? list.list : null);

const OWNERS: Record<string, Owner> = {
  templates: byInt((db, id) => db.template.findUnique({ where: { id }, select: account })),
  broadcasts: byInt((db, id) => db.broadcast.findUnique({ where: { id }, select: account })),
  campaigns: byInt((db, id) => db.campaign.findUnique({ where: { id }, select: account })),
  lists: byInt((db, id) => db.list.findUnique({ where: { id }, select: account })),
  subscribers: byInt(async (db, id) => ofList(await db.subscriber.findUnique({ where: { id }, select: { list: { select: account } } }))),
  imports: byInt(async (db, id) => ofList(await db.import.findUnique({ where: { id }, select: { list: { select: account } } }))),
  domains: byInt((db, id) => db.domain.findUnique({ where: { id }, select: account })),
  'tracking-domains': byInt((db, id) => db.trackingDomain.findUnique({ where: { id }, select: account })),
  routes: byInt((db, id) => db.inboundRoute.findUnique({ where: { id }, select: account })),
  webhooks: byInt((db, id) => db.webhook.findUnique({ where: { id }, select: account })),
  mailboxes: byInt((db, id) => db.mailbox.findUnique({ where: { id }, select: account })),
  keys: byInt((db, id) => db.apiKey.findUnique({ where: { id }, select: account })),
  suppressions: byInt((db, id) => db.suppression.findUnique({ where: { id }, select: account })),
  'stop-list': byInt((db, id) => db.stopEntry.findUnique({ where: { id }, select: account })),
  messages: byUuid((db, id) => db.message.findUnique({ where: { id }, select: account })),
  /** the console's sandbox page shows a message's kept copy by the message's id */
  sandbox: byUuid((db, id) => db.message.findUnique({ where: { id }, select: account })),
  /** the admin API's held MX messages (a UUID), the console's emails read from a mailbox (a number) */
  inbound: async (db, id) =>
    UUID.test(id)
      ? db.mxMessage.findUnique({ where: { id: id.toLowerCase() }, select: account })
      : bySafeInt(async (db, id) => (await db.inboundMessage.findUnique({ where: { id }, select: { mailbox: { select: account } } }))?.mailbox ?? null)(db, id),
};

/** The account of a list named by its key (a broadcast's audience), if it exists. */
export async function accountOfListKey(db: Tx, key: string): Promise<number | undefined> {
  return (await db.list.findFirst({ where: { key }, select: account }))?.accountId;
}

/** The account of one row of a resource (its path's first segment) by id, if it exists. */
export async function accountOfRow(db: Tx, resource: string, id: string): Promise<number | undefined> {
  return (await OWNERS[resource]?.(db, id))?.accountId;
}

/** The account of the row `path` names (under /admin/api or the console's /admin; the console's `/mx/routes/<id>` too). */
export async function accountOfPath(db: Tx, path: string): Promise<number | undefined> {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'mx') parts.shift();
  const [resource, id] = parts;
  return resource && id ? accountOfRow(db, resource, id) : undefined;
}
