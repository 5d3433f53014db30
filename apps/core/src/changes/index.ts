import type { Tx } from '../db';
import { getBroadcast } from '../broadcasts/service';
import { getDomain } from '../domains';
import { findMailbox, mailboxView } from '../mailboxes';
import { getRoute } from '../mx/routes';
import { getCampaign } from '../outreach/campaigns';
import { getList } from '../subscribers/lists';
import { getTemplate } from '../templates/service';
import { getTrackingDomain } from '../tracking-domains';
import { getWebhook } from '../webhooks/service';

/**
 * The audit entries' descriptions of the changes made by id (`Change` of ./index.ts), one each, shared by the doors
 * that make them: the admin API, the console and the CLI (docs/teams.md). Each reads the row as it was in the change's
 * transaction, so the entry has its `before` and the change is held to the row's account.
 */
type Owned = 'list' | 'campaign' | 'broadcast' | 'message' | 'suppression' | 'stopEntry';

/** The account of a row whose view does not name it, read in the change's transaction. */
export const ownerIn =
  (model: Owned, id: number | string) =>
  async (tx: Tx): Promise<number | undefined> =>
    (await (tx[model] as unknown as { findUnique(args: object): Promise<{ accountId: number | null } | null> }).findUnique({ where: { id }, select: { accountId: true } }))?.accountId ?? undefined;

const same = (view: unknown) => view;

/** A change of a campaign (a running campaign's due steps reach the queue once it is committed). */
export const campaignChange = (id: number) => ({ action: 'update', resource: 'campaign', id, before: (tx: Tx) => getCampaign(tx, id), after: same, accountIn: ownerIn('campaign', id) });

/** A change of a mailbox (a reconnected mailbox's waiting emails reach the queue once it is committed). */
export const mailboxChange = (id: number) => ({ action: 'update', resource: 'mailbox', id, before: async (tx: Tx) => mailboxView(await findMailbox(tx, id)), after: same });

/** An import into a list: its lines streamed first, then the import marked received with this entry, then queued. */
export const importChange = (id: number, format: string) => ({ action: 'import', resource: 'list', id, after: (i: { id: number; status: string }) => ({ import: i.id, status: i.status, format }), accountIn: ownerIn('list', id) });

export const listChange = (id: number) => ({ action: 'update', resource: 'list', id, before: (tx: Tx) => getList(tx, id), after: same, accountIn: ownerIn('list', id) });

/** A change of a broadcast (one set sending reaches the queue once it is committed). */
export const broadcastChange = (id: number) => ({ action: 'update', resource: 'broadcast', id, before: (tx: Tx) => getBroadcast(tx, id), after: same, accountIn: ownerIn('broadcast', id) });

/** A retry or a cancel of a message (its job is promoted or removed once it is committed). */
export const messageChange = (action: 'retry' | 'cancel', id: string) => ({ action, resource: 'message', id, after: same, accountIn: ownerIn('message', id) });

export const webhookChange = (action: string, id: number) => ({ action, resource: 'webhook', id, before: (tx: Tx) => getWebhook(tx, id), after: same });

export const templateChange = (action: string, id: number) => ({ action, resource: 'template', id, before: (tx: Tx) => getTemplate(tx, id), after: same });

export const domainChange = (action: string, id: number, account?: number) => ({ action, resource: 'domain', id, before: (tx: Tx) => getDomain(tx, id, account), after: same });

export const trackingDomainChange = (action: string, id: number, account?: number) => ({ action, resource: 'tracking-domain', id, before: (tx: Tx) => getTrackingDomain(tx, id, account), after: same });

export const routeChange = (action: string, id: number, account?: number) => ({ action, resource: 'route', id, before: (tx: Tx) => getRoute(tx, id, account), after: same });

/** A row made: its view (`after`) names its id and, most often, its account; `account` when it does not. */
export const creation = (resource: string, account?: number) => ({ action: 'create', resource, after: same, account });

/** A broadcast made for a list (by its key): its account is the list's. */
export const broadcastCreation = (list: string) => ({ ...creation('broadcast'), accountIn: async (tx: Tx) => (await tx.list.findFirst({ where: { key: list }, select: { accountId: true } }))?.accountId });

/** A held MX message released or dropped. */
export const mxMessageChange = (action: 'release' | 'drop' | 'replay', id: string) => ({ action, resource: 'mx-message', id, accountIn: async (tx: Tx) => (await tx.mxMessage.findUnique({ where: { id }, select: { accountId: true } }))?.accountId });

/** An address taken off the suppression list by id (the row as it was). */
export const suppressionDeletion = (id: number) => ({ action: 'delete', resource: 'suppression', id, before: (tx: Tx) => tx.suppression.findUnique({ where: { id } }), accountIn: ownerIn('suppression', id) });

/** An entry taken off the stop list by id (the row as it was). */
export const stopEntryDeletion = (id: number) => ({ action: 'delete', resource: 'stop-entry', id, before: (tx: Tx) => tx.stopEntry.findUnique({ where: { id } }), accountIn: ownerIn('stopEntry', id) });
