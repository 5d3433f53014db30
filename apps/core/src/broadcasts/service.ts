import { requireTopics } from '../topics';
import { checkSources, templateIdOf } from '../templates/service';
import { besideTemplate } from '../templates/schema';
import type { Broadcast, List } from '../../../../generated/prisma/client';
import { afterCommit } from '../after-commit';
import { Prisma, type Db, type Tx } from '../db';
import { BadRequest, Conflict, Forbidden, NotFound } from '../errors';
import { mailboxStartRefusal } from '../domains/sending';
import { jobId, JOB_OPTIONS, QUEUE, queue } from '../queues';
import { iso } from '../validate';
import { copyCounts, deleteUnclaimedCopies, lockBroadcast } from './repository';
import type { AudienceInput, BroadcastChanges, BroadcastInput } from './schema';
import { checkAudience, storedSegment } from './segment';
import { abColumns, broadcastTest } from './ab';
import { accountWhere, type AccountScope } from '../account-scope';

export interface Progress {
  sent: number;
  failed: number;
  skipped: number;
  /** copies written and not final yet (queued, sending, deferred) */
  pending: number;
}

/**
 * Counts of the broadcast's copies. `skipped`: copies cancelled before they went out (the person unsubscribed or was
 * suppressed after the copy was written), plus, once the broadcast is sent, the audience that never got a copy
 * written (left before their page was reached).
 */
export async function progressOf(db: Tx, broadcast: Pick<Broadcast, 'id' | 'status' | 'audience'>): Promise<Progress> {
  const row = await copyCounts(db, broadcast.id);
  const never = broadcast.status === 'sent' ? Math.max(0, broadcast.audience - row.copies) : 0;
  return { sent: row.sent, failed: row.failed, skipped: row.cancelled + never, pending: row.pending };
}

export function broadcastView(b: Broadcast & { list: Pick<List, 'key'> }, progress: Progress) {
  return {
    id: b.id,
    list: b.list.key,
    subject: b.subject,
    html: b.html,
    text: b.text,
    tags: b.tags,
    /** the rest of its audience (fields, engagement, dates: docs/broadcasts.md); null: the whole list less `tags` */
    segment: b.segment,
    /** the topics it is for (docs/preferences.md); [] the whole list */
    topics: b.topics,
    /** shown on the list's public archive */
    archive: b.archive,
    status: b.status,
    /** why the service paused it (auto-pause, docs/outreach.md); null otherwise */
    paused_reason: b.pausedReason,
    send_at: iso(b.sendAt),
    track_clicks: b.trackClicks,
    track_opens: b.trackOpens,
    /** the stored template its copies are rendered from (docs/templates.md), or null */
    template: b.templateId,
    audience: b.audience,
    sent: progress.sent,
    failed: progress.failed,
    skipped: progress.skipped,
    pending: progress.pending,
    started_at: iso(b.startedAt),
    finished_at: iso(b.finishedAt),
    created_at: iso(b.createdAt),
  };
}
export type BroadcastView = ReturnType<typeof broadcastView>;

async function view(db: Tx, id: number): Promise<BroadcastView & { ab?: unknown }> {
  const b = await db.broadcast.findUnique({ where: { id }, include: { list: { select: { key: true } } } });
  if (!b) throw new NotFound(`no broadcast with id ${id}`);
  // an A/B test: its variants' numbers and the verdict (ab.ts)
  const ab = await broadcastTest(db, b);
  return { ...broadcastView(b, await progressOf(db, b)), ...(ab ? { ab } : {}) };
}

export const getBroadcast = view;

/** The tags and segment a request gives (`audience`, checked: segment.ts), or its plain `tags`. */
async function audienceOf(db: Tx, list: { id: number; accountId: number }, audience: AudienceInput | null | undefined, tags: string[] | undefined) {
  if (!audience) return { tags: tags ?? [], segment: null };
  await checkAudience(db, list, audience);
  return storedSegment(audience);
}

export async function createBroadcast(db: Tx, input: BroadcastInput): Promise<BroadcastView> {
  const beside = besideTemplate(input);
  if (beside) throw new BadRequest(beside);
  const list = await db.list.findUnique({ where: { key: input.list } });
  if (!list) throw new NotFound(`no list with key "${input.list}"`);
  const templateId = input.template == null ? null : await templateIdOf(db, list.accountId, input.template);
  checkSources({ subject: input.subject, html: input.html, text: input.text });
  for (const [i, v] of (input.variants ?? []).entries()) checkSources({ [`variants[${i}].subject`]: v.subject, [`variants[${i}].body`]: v.body });
  const ab = abColumns(input);
  const audience = await audienceOf(db, list, input.audience, input.tags);
  requireTopics(list, input.topics ?? []);
  const created = await db.broadcast.create({
    data: {
      ...ab,
      accountId: list.accountId,
      listId: list.id,
      subject: input.subject ?? '',
      html: input.html ?? null,
      text: input.text ?? null,
      templateId,
      tags: audience.tags,
      segment: (audience.segment ?? undefined) as Prisma.InputJsonValue | undefined,
      sendAt: input.send_at ?? null,
      trackClicks: input.track_clicks ?? false,
      trackOpens: input.track_opens ?? false,
      topics: input.topics ?? [],
      archive: input.archive ?? false,
    },
  });
  return view(db, created.id);
}

/** Newest first; `list` narrows to one list. */
export async function listBroadcasts(db: Tx, query: { list?: string; limit: number; account?: AccountScope }): Promise<BroadcastView[]> {
  const where = { ...(query.list ? { list: { key: query.list } } : {}), ...accountWhere(query.account) };
  const rows = await db.broadcast.findMany({ where, orderBy: { id: 'desc' }, take: query.limit, include: { list: { select: { key: true } } } });
  return Promise.all(rows.map(async (b) => broadcastView(b, await progressOf(db, b))));
}

/** Which status a request may move a broadcast to, from where. */
const MOVES: Record<string, string[]> = {
  sending: ['draft', 'paused'],
  paused: ['scheduled', 'sending'],
  cancelled: ['draft', 'scheduled', 'sending', 'paused'],
};

/**
 * PATCH: content while draft; `sending` from draft (scheduled when send_at is ahead) or paused (resume); `paused` and
 * `cancelled` take back the copies written and not yet claimed by a worker (deleted: a resume writes them again,
 * the unique (broadcast, subscriber) index keeps it to one each). Copies already on the wire finish.
 * The broadcast job is queued after the commit.
 */
export async function changeBroadcast(db: Db, id: number, changes: BroadcastChanges): Promise<BroadcastView> {
  // `archive` may change whatever the status (an issue is archived or taken out after it went out: docs/preferences.md)
  const { status, archive, ...given } = changes;
  const content = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as typeof given;
  const queued = await db.$transaction(async (tx) => {
    if (!(await lockBroadcast(tx, id))) throw new NotFound(`no broadcast with id ${id}`);
    const current = await tx.broadcast.findUniqueOrThrow({ where: { id } });
    const hasContent = Object.keys(content).length > 0;
    if (archive !== undefined) await tx.broadcast.update({ where: { id }, data: { archive } });
    if (hasContent && current.status !== 'draft') throw new Conflict(`a broadcast can be edited only while draft (it is ${current.status})`);
    if (hasContent) {
      const beside = besideTemplate(content);
      if (beside) throw new BadRequest(beside);
      const templateId = content.template === undefined ? current.templateId : content.template === null ? null : await templateIdOf(tx, current.accountId, content.template);
      const next = { html: current.html, text: current.text, variants: current.variants, ...content };
      if (!next.html && !next.text && templateId === null && !next.variants) throw new BadRequest('html or text is required (or a template, or variants)');
      for (const [i, v] of (content.variants ?? []).entries()) checkSources({ [`variants[${i}].subject`]: v.subject, [`variants[${i}].body`]: v.body });
      const ab = content.variants !== undefined || content.winner !== undefined || content.test_share !== undefined
        ? abColumns({ variants: next.variants as never, winner: content.winner ?? (current.winner as never), test_share: content.test_share ?? current.testShare, track_clicks: content.track_clicks ?? current.trackClicks, subject: content.subject, html: content.html, text: content.text, template: content.template })
        : {};
      checkSources({ subject: content.subject, html: content.html, text: content.text });
      const audience =
        content.audience !== undefined ? await audienceOf(tx, { id: current.listId, accountId: current.accountId }, content.audience, undefined) : null;
      if (content.topics) requireTopics(await tx.list.findUniqueOrThrow({ where: { id: current.listId } }), content.topics);
      await tx.broadcast.update({
        where: { id },
        data: {
          ...ab,
          templateId,
          subject: content.subject,
          html: content.html,
          text: content.text,
          tags: audience ? audience.tags : content.tags,
          ...(audience ? { segment: (audience.segment as Prisma.InputJsonValue | null) ?? Prisma.DbNull } : {}),
          sendAt: content.send_at,
          trackClicks: content.track_clicks,
          trackOpens: content.track_opens,
          topics: content.topics,
        },
      });
    }
    if (!status || status === current.status) return null;
    if (!MOVES[status]!.includes(current.status)) throw new Conflict(`a ${current.status} broadcast cannot become ${status}`);
    if (status === 'sending') {
      // REQUIRE_VERIFIED_DOMAIN: a broadcast from a mailbox of an unverified domain does not start (docs/domains.md)
      const list = await tx.list.findUniqueOrThrow({ where: { id: current.listId }, include: { mailbox: true } });
      const refusal = await mailboxStartRefusal(tx, list.mailbox);
      if (refusal) throw new Forbidden(refusal);
      const sendAt = content.send_at !== undefined ? content.send_at : current.sendAt;
      const later = current.status === 'draft' && sendAt && sendAt.getTime() > Date.now();
      // a resume clears the service's reason for a pause and starts a new auto-pause window (docs/outreach.md)
      const resumed = current.status === 'paused' ? { pausedReason: null, windowSince: new Date() } : {};
      const updated = await tx.broadcast.update({ where: { id }, data: { status: later ? 'scheduled' : 'sending', runs: { increment: 1 }, ...resumed } });
      return { runs: updated.runs, delay: later ? sendAt.getTime() - Date.now() : 0 };
    }
    await tx.broadcast.update({ where: { id }, data: { status, ...(status === 'cancelled' ? { finishedAt: new Date() } : {}) } });
    await deleteUnclaimedCopies(tx, id);
    return null;
  });
  if (queued) await afterCommit(db, () => queueBroadcastJob(id, queued.runs, queued.delay));
  return view(db, id);
}

/** One job per start or resume (`bc-<id>-<run>`); the job itself is idempotent, so a duplicate costs nothing. */
export async function queueBroadcastJob(id: number, run: number, delay = 0): Promise<void> {
  await queue(QUEUE.broadcast).add('broadcast', { broadcastId: id }, { ...JOB_OPTIONS.broadcast, jobId: jobId.broadcast(id, run), delay });
}
