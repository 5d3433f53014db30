import type { List } from '../../../../generated/prisma/client';
import { config } from '../config';
import { randomBase62 } from '../crypto';
import type { Db, Tx } from '../db';
import { BadRequest, NotFound } from '../errors';
import { requireAccount } from '../accounts';
import { requireMailbox } from '../mailboxes';
import { seriesOf, setSeriesSteps, type SeriesStepView } from '../lifecycle/series';
import type { SeriesStepInput } from '../lifecycle/schema';
import type { Prisma } from '../../../../generated/prisma/client';
import { topicsOf, type Topic } from '../topics';

/** The List of docs/api.md. */
export interface ListView {
  key: string;
  name: string;
  confirm: boolean;
  subscribers: number;
  /** docs/preferences.md: a public list has an archive */
  public: boolean;
  /** the preference centre's "send me my link" page */
  preferences_url: string;
  /** the archive page of a public list; null for a private one */
  archive_url: string | null;
}

/** The preference centre's "send me my link" page of a list (apps/api/src/routes/preferences.ts). */
export const listPreferencesUrl = (key: string) => `${config().publicUrl}/preferences/list/${encodeURIComponent(key)}`;
/** The public archive page of a list (apps/api/src/routes/archive.ts); its feed is `<archive_url>/feed.xml`. */
export const archiveUrl = (key: string) => `${config().publicUrl}/archive/${encodeURIComponent(key)}`;

export function listView(list: List): ListView {
  return {
    key: list.key,
    name: list.name,
    confirm: list.confirm,
    subscribers: list.subscriberCount,
    public: list.public,
    preferences_url: listPreferencesUrl(list.key),
    archive_url: list.public ? archiveUrl(list.key) : null,
  };
}

/** The hosted sign-up form of a list (apps/api/src/routes/pages.ts, `/f/:key`), under PUBLIC_URL. */
export function formUrl(key: string): string {
  return `${config().publicUrl}/f/${encodeURIComponent(key)}`;
}

/** A list as the operator sees it (admin API, CLI): the public view, its ids and its form's address. */
export type AdminListView = ListView & {
  id: number;
  account: number;
  mailbox: number;
  form_url: string;
  /** docs/preferences.md */
  topics: Topic[];
};

function adminListView(list: List): AdminListView {
  return {
    id: list.id,
    account: list.accountId,
    mailbox: list.mailboxId,
    ...listView(list),
    form_url: formUrl(list.key),
    topics: topicsOf(list),
  };
}

export interface NewList {
  account: number;
  name: string;
  confirm: boolean;
  mailbox: number;
  /** the welcome series (docs/lists.md) */
  steps?: SeriesStepInput[];
  topics?: Topic[];
  public?: boolean;
}

/** One list with its welcome series: each step with how many wait for it, got it, left before it. */
export type ListWithSeries = AdminListView & { steps: SeriesStepView[] };

export async function createList(db: Db, input: NewList): Promise<ListWithSeries> {
  await requireAccount(db, input.account);
  await requireMailbox(db, input.account, input.mailbox);
  const list = await db.$transaction(async (tx) => {
    const created = await tx.list.create({
      data: {
        accountId: input.account,
        mailboxId: input.mailbox,
        name: input.name,
        confirm: input.confirm,
        key: randomBase62(20),
        topics: (input.topics ?? []) as unknown as Prisma.InputJsonValue,
        public: input.public ?? false,
      },
    });
    if (input.steps?.length) await setSeriesSteps(tx, created, input.steps);
    return created;
  });
  return { ...adminListView(list), steps: await seriesOf(db, list.id) };
}

export async function listLists(db: Tx, account: number): Promise<ListView[]> {
  const lists = await db.list.findMany({ where: { accountId: account }, orderBy: { id: 'asc' } });
  return lists.map(listView);
}

/** One list as the operator sees it, with its welcome series. */
/**
 * A list as the CLI names it (docs/lists.md): by its id or by its key, whichever is given. Digits are an id first (a
 * key of digits only is still found by its key).
 */
export async function listRef(db: Tx, ref: unknown): Promise<{ id: number; key: string }> {
  const given = typeof ref === 'string' ? ref.trim() : typeof ref === 'number' ? String(ref) : '';
  if (!given) throw new BadRequest('name the list by its id or its key');
  const id = /^[0-9]{1,10}$/.test(given) && Number(given) <= 2_147_483_647 ? Number(given) : null;
  const byId = id === null ? null : await db.list.findUnique({ where: { id }, select: { id: true, key: true } });
  const found = byId ?? (await db.list.findUnique({ where: { key: given }, select: { id: true, key: true } }));
  if (!found) throw new NotFound(`no list with id or key "${given}"`);
  return found;
}

export async function getList(db: Tx, id: number): Promise<ListWithSeries> {
  const list = await db.list.findUnique({ where: { id } });
  if (!list) throw new NotFound(`no list with id ${id}`);
  return { ...adminListView(list), steps: await seriesOf(db, list.id) };
}

export interface ListChanges {
  name?: string;
  confirm?: boolean;
  mailbox?: number;
  /** replaces the welcome series; [] removes it (runs under way end when their next step comes up) */
  steps?: SeriesStepInput[];
  /** replaces the topics; a subscriber's choice of a topic removed is kept, and counts again if the topic comes back */
  topics?: Topic[];
  public?: boolean;
}

/**
 * PATCH /admin/api/lists/:id: name, double opt-in, the mailbox that sends its emails (of the same account), the
 * welcome series; never the key.
 */
export async function changeList(db: Db, id: number, changes: ListChanges): Promise<ListWithSeries> {
  const list = await db.list.findUnique({ where: { id } });
  if (!list) throw new NotFound(`no list with id ${id}`);
  if (changes.mailbox !== undefined) await requireMailbox(db, list.accountId, changes.mailbox);
  await db.$transaction(async (tx) => {
    await tx.list.update({
      where: { id },
      data: {
        name: changes.name,
        confirm: changes.confirm,
        mailboxId: changes.mailbox,
        topics: changes.topics as unknown as Prisma.InputJsonValue | undefined,
        public: changes.public,
      },
    });
    if (changes.steps) await setSeriesSteps(tx, list, changes.steps);
  });
  return getList(db, id);
}
