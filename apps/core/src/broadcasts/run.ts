import type { Broadcast, List, Mailbox } from '../../../../generated/prisma/client';
import { tracked } from '../analytics/tracking';
import type { Db } from '../db';
import { addDeliveryJobs, messageRow, type DeliveryQueue } from '../delivery/outbox';
import { markNotEnqueued } from '../delivery/repository';
import { emitEvent } from '../events';
import { newId } from '../ids';
import { logger } from '../logger';
import { listId, renderCopy } from '../templates/list-copy';
import { storedSource } from '../templates/service';
import { progressOf } from './service';
import { ruleOf } from './segment';
import { audiencePage, broadcastStatus, insertCopies, lockBroadcast, lockBroadcastStatus, queuedCopiesAfter, snapshotAudience, stillWaiting } from './repository';
import { trackingBase } from '../tracking-domains/links';
import { afterTestShare, inTestShare, testing, variantOf } from './ab';

/** Subscribers read, rendered and written per statement. */
export const PAGE_SIZE = 500;
/**
 * Copies per `dispatch` job. A worker takes a dispatch job's rows onto the wire in slices of up to its row slots (100 by
 * default), each slice waiting for that many free slots: jobs of 500 would drain the pipeline to empty between
 * slices; jobs of 50 keep two slices overlapping.
 */
export const DISPATCH_SIZE = 50;
/** Pages written and not yet on the wire: the copies waiting in Redis and Postgres stay under PAGE_SIZE times this. */
export const PAGES_AHEAD = 4;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Loaded = Broadcast & { list: List & { mailbox: Mailbox } };

/**
 * Starts the broadcast when it is due: a scheduled one turns `sending` at send_at; the first run of a sending one
 * takes the audience snapshot (the list's eligible subscribers its tags and segment take: segment.ts) into broadcast_recipients.
 * Answers the broadcast when it is sending, send_at when that is still ahead, null when there is nothing to do
 * (paused, cancelled, sent).
 */
async function start(db: Db, id: number): Promise<Loaded | Date | null> {
  return db.$transaction(
    async (tx) => {
      if (!(await lockBroadcast(tx, id))) return null;
      let b = await tx.broadcast.findUniqueOrThrow({ where: { id }, include: { list: { include: { mailbox: true } } } });
      if (b.status === 'scheduled') {
        if (b.sendAt && b.sendAt.getTime() > Date.now()) return b.sendAt;
        b = await tx.broadcast.update({ where: { id }, data: { status: 'sending' }, include: { list: { include: { mailbox: true } } } });
      }
      if (b.status !== 'sending') return null;
      if (!b.startedAt) {
        const audience = await snapshotAudience(tx, id, b.listId, ruleOf(b));
        b = await tx.broadcast.update({
          where: { id },
          data: { audience, startedAt: new Date() },
          include: { list: { include: { mailbox: true } } },
        });
      }
      return b;
    },
    { timeout: 120_000, maxWait: 10_000 },
  );
}

/**
 * Writes the copies of one keyset page of the audience (those still eligible and without a copy) and returns the page's
 * last subscriber id (null past the end) and the ids written. The insert holds the broadcast row FOR SHARE and writes
 * only while it is `sending`: a pause either comes before (nothing written) or waits for this commit (and then takes
 * back what it wrote). The unique (broadcast_id, subscriber_id) of broadcast_copies makes a second writer of the same page (a job
 * run twice, a retry after a crash) write nothing.
 */
async function writePage(db: Db, b: Loaded, after: number, size: number, listIdHeader: string): Promise<{ last: number | null; written: string[] }> {
  const page = await audiencePage(db, b.id, after, size);
  if (!page.length) return { last: null, written: [] };
  // an A/B test's first run writes its test share only (ab.ts)
  const due = page.filter((p) => p.due && (!testing(b) || inTestShare(b, p.id)));
  // a broadcast built on a stored template: its sources (html inside its layout) as they are now, read once a page
  const stored = b.templateId === null ? b : await storedSource(db, b.templateId);
  // the account's tracking domain while its certificate is live, else PUBLIC_URL (docs/tracking-domains.md)
  const base = b.trackClicks || b.trackOpens ? await trackingBase(db, b.accountId) : undefined;
  const rows = due.map((p) => {
    const id = newId();
    const variant = variantOf(b, p.id);
    const source = variant ? { subject: variant.subject, html: variant.html, text: null } : stored;
    // opt-in tracking: each copy's links carry its own signed tokens (analytics/tracking.ts), put into the template before
    // the reader's fields are merged, so a merged field (a stranger's name typed as a URL) never becomes a tracked link
    const content = b.trackClicks || b.trackOpens ? { subject: source.subject, ...tracked(source, id, { clicks: b.trackClicks, opens: b.trackOpens, base }) } : source;
    const copy = renderCopy(content, p, listIdHeader, b.topics);
    const row = messageRow({
      id,
      accountId: b.accountId,
      mailboxId: b.list.mailboxId,
      fromAddress: b.list.mailbox.address,
      kind: 'broadcast',
      to: p.email,
      subject: copy.subject,
      subscriberId: p.id,
    });
    return { ...row, html: copy.html, text: copy.text, headers: JSON.stringify(copy.headers), variant: variant?.index ?? null };
  });
  const written = rows.length ? await insertCopies(db, { id: b.id, accountId: b.accountId, mailboxId: b.list.mailboxId }, rows) : [];
  return { last: page[page.length - 1]!.id, written };
}

/**
 * Copies a run wrote but did not get onto the queue before it died (killed between its insert and its Redis call):
 * each gets a delivery job of its own now, rather than waiting for the reconciler's five minutes. A copy that is
 * queued already is claimed once all the same (a job that finds its row taken or final does nothing).
 */
async function requeueOrphans(db: Db, id: number): Promise<void> {
  for (let after = '00000000-0000-0000-0000-000000000000'; ; ) {
    const rows = await queuedCopiesAfter(db, id, after, PAGE_SIZE);
    if (!rows.length) return;
    await addDeliveryJobs(rows);
    after = rows[rows.length - 1]!.id;
  }
}

export interface RunOptions {
  /** called after each page is written and queued (tests, the crash fixture) */
  onPage?: (written: number) => void;
  pollMs?: number;
  /**
   * Aborted when the worker stops (SIGTERM): the run returns 'interrupted' between two steps, and the job goes back to
   * the queue for the next worker. Without it a stopping worker waited for the broadcast's last copy, which the
   * worker's own delivery jobs, stopped first, would never send: the process never exited.
   */
  signal?: AbortSignal;
}

/**
 * The broadcast job: start (snapshot), then the audience in keyset pages of PAGE_SIZE: render, write the copies
 * (unique per subscriber), queue them as one `dispatch` job through the ordinary delivery path. At most PAGES_AHEAD
 * pages wait for the worker at once, so memory, Redis and the claim queue stay flat whatever the list's size, and a
 * pause has little to take back. A mailbox's `max_per_second` makes pages smaller and spaces them a second apart.
 * When every page is written and no copy is left unfinished, the broadcast becomes `sent` and `broadcast.finished` is
 * written in that same transaction. A job that comes before send_at answers send_at (the processor waits till then). Any number of runs at once, or one after a crash, end with one copy per person.
 */
export async function runBroadcast(db: Db, deliveries: DeliveryQueue, id: number, options: RunOptions = {}): Promise<'sent' | 'stopped' | 'idle' | 'interrupted' | Date> {
  const b = await start(db, id);
  if (!b || b instanceof Date) return b ?? 'idle';
  await requeueOrphans(db, id);
  // an A/B test waiting for its verdict: nothing to write until then (the processor delays the job to that time)
  if (testing(b) && b.testSentAt) {
    const at = await afterTestShare(db, b);
    if (at) return at;
  }
  const pollMs = options.pollMs ?? 50;
  const perSecond = b.list.mailbox.maxPerSecond;
  const size = perSecond ? Math.min(PAGE_SIZE, perSecond) : PAGE_SIZE;
  const header = listId(b.list, b.list.mailbox.address);
  const ahead: string[][] = [];
  let after = 0;
  const interrupted = () => options.signal?.aborted === true;
  for (;;) {
    if (interrupted()) return 'interrupted';
    if ((await broadcastStatus(db, id)) !== 'sending') return 'stopped';
    const began = Date.now();
    const { last, written } = await writePage(db, b, after, size, header);
    if (last === null && testing(b)) {
      // the test share is written: wait `after_hours` for its verdict, then write the rest from the start
      const at = await afterTestShare(db, b);
      if (at) return at;
      after = 0;
      continue;
    }
    if (last === null) break;
    after = last;
    for (let i = 0; i < written.length; i += DISPATCH_SIZE) {
      const chunk = written.slice(i, i + DISPATCH_SIZE);
      await deliveries.add(chunk.map((messageId) => ({ id: messageId }))).catch(async (err: unknown) => {
        // Redis did not take the job: the reconciler queues the rows (their enqueued mark is cleared); Redis away is
        // the dependency watch's one line (DeliveryQueue)
        logger.debug({ broadcast: id, err: (err as Error).message }, 'broadcast copies left to the reconciler');
        await markNotEnqueued(db, chunk);
      });
    }
    if (written.length) ahead.push(written);
    options.onPage?.(written.length);
    // the oldest page's copies still waiting are read again until none is: each read asks only for those left at the
    // last one (every read visits each version of the rows it names), after about a millisecond a copy left (a
    // worker's pace at best), so the pages behind it keep the worker busy meanwhile
    while (ahead.length >= PAGES_AHEAD) {
      if (interrupted()) return 'interrupted';
      const waiting = await stillWaiting(db, ahead[0]!);
      if (waiting.length === 0) ahead.shift();
      else if ((await broadcastStatus(db, id)) !== 'sending') return 'stopped';
      else {
        ahead[0] = waiting;
        await sleep(Math.max(pollMs, Math.min(waiting.length, PAGE_SIZE)));
      }
    }
    if (perSecond) await sleep(Math.max(0, (size / perSecond) * 1000 - (Date.now() - began)));
  }
  // every copy is written: wait for the last ones to be final (or for a pause), then close
  for (;;) {
    if (interrupted()) return 'interrupted';
    const done = await db.$transaction(async (tx) => {
      if ((await lockBroadcastStatus(tx, id)) !== 'sending') return 'stopped' as const;
      const progress = await progressOf(tx, { id, status: 'sent', audience: b.audience });
      if (progress.pending > 0) return null;
      const finishedAt = new Date();
      await tx.broadcast.update({ where: { id }, data: { status: 'sent', finishedAt } });
      await emitEvent(tx, b.accountId, 'broadcast.finished', {
        broadcast: id,
        list: b.list.key,
        subject: b.subject,
        audience: b.audience,
        sent: progress.sent,
        failed: progress.failed,
        skipped: progress.skipped,
        started_at: b.startedAt?.toISOString() ?? null,
        finished_at: finishedAt.toISOString(),
      });
      return 'sent' as const;
    });
    if (done) return done;
    await sleep(Math.max(pollMs, 250));
  }
}
