import { Batcher } from '../batch';
import type { Db } from '../db';
import { messageRow } from '../delivery/outbox';
import { utcDay } from './quota';
import { insertAcceptedSends, type SendToWrite, type SkipReason } from './repository';

export type { SendToWrite, SkipReason } from './repository';

export interface AcceptedWrite {
  /** what was written: nothing when `kept` is empty (nobody to write to) or `used` is null (over the daily limit) */
  used: number | null;
  kept: { id: string; to: string }[];
  skipped: { to: string; reason: SkipReason }[];
  /** a template it was rendered from changed meanwhile: nothing written (render again) */
  stale: boolean;
  /**
   * For a send with a claim: the idempotency record it took (its send may still have been refused: then the caller
   * frees it), or null when its key was held and nothing was written. Absent for a send without a claim.
   */
  claimed?: number | null;
}

/**
 * Everything accepted sends do to Postgres, as ONE statement for a whole batch of sends (WRITE_SENDS in repository.ts
 * says what it checks and writes): one round trip and one atomic commit. A batch request's sends (batches/index.ts)
 * call it directly: one statement counts them against the key's limit all or nothing.
 */
export async function writeBatch(db: Db, sends: SendToWrite[]): Promise<AcceptedWrite[]> {
  const rows = sends.map(({ key, mailbox, request, sendId, messageIdHeader }) =>
    request.to.map((to) => ({
      ...messageRow({ accountId: key.accountId, mailboxId: mailbox.id, fromAddress: mailbox.address, kind: 'transactional', sendId, to, subject: request.subject }),
      // a message submitted over SMTP goes out as written: its copies are known by the Message-ID it carries
      ...(messageIdHeader ? { messageIdHeader } : {}),
    })),
  );
  const copies = rows.flatMap((list, i) => list.map((row) => ({ send: i + 1, row })));
  const result = await insertAcceptedSends(db, utcDay().toISOString().slice(0, 10), sends, copies);
  return result.map(({ used, skipped, stale, claimed }, i) => {
    const skippedSet = new Set(skipped.map((s) => s.to));
    const kept = rows[i]!.filter((r) => !skippedSet.has(r.to)).map((r) => ({ id: r.id!, to: r.to }));
    return { used, kept, skipped, stale, ...(sends[i]!.claim ? { claimed } : {}) };
  });
}

/**
 * A batch, then, for each send its key's limit refused inside a batch of several, that send again alone and in order:
 * the limit answers exactly as if every send had come by itself. Its claim was taken by the batch (or its key held):
 * alone it is written under that record, or not at all.
 */
export async function writeSends(db: Db, sends: SendToWrite[]): Promise<AcceptedWrite[]> {
  const written = await writeBatch(db, sends);
  if (sends.length > 1) {
    for (let i = 0; i < sends.length; i++) {
      const first = written[i]!;
      if (first.used !== null || !first.kept.length || first.stale || first.claimed === null) continue;
      const alone = (await writeBatch(db, [{ ...sends[i]!, claim: undefined }]))[0]!;
      written[i] = 'claimed' in first ? { ...alone, claimed: first.claimed } : alone;
    }
  }
  return written;
}

/**
 * A second statement starts beside the one in flight once this many sends wait (a batch is 50 at most). Under a burst
 * the next statement is then at Postgres when the one before commits (it waits for that commit where both count
 * against one key's usage row), instead of starting only once the API has read that answer behind the requests it was
 * reading. A second statement for every send that arrived, however few, made them small: 3.3 sends a statement in the
 * delivery phase, and Postgres and the API took more of the two cores from delivering. Each statement costs Postgres
 * about 1 ms of CPU whatever its size, over half of it its commit (bench/README.md, What is left): so the second one
 * waits for a near-full batch, and a burst's statements stay large (the figures of 20 against 45: commit 4631a24).
 */
const OVERLAP_AT = 45;

/**
 * Sends accepted at the same moment share one statement and one commit (bench/README.md: the commit and the statement,
 * not the rows, were most of Postgres's cost per send). The answer comes once that commit is done. The sends that
 * arrive while a statement runs make the next one, which starts beside it once OVERLAP_AT wait, else when it ends.
 * Two statements of one key cannot pass its daily limit together: each counts on the key's usage row, locked in key
 * order (repository.ts).
 */
export class SendWriter {
  private readonly batcher: Batcher<SendToWrite, AcceptedWrite>;

  /** One per API process (createSending): its accepted sends share the statements. */
  constructor(db: Db) {
    this.batcher = new Batcher((sends) => writeSends(db, sends), { maxInFlight: 2, maxBatch: 50, overlapAt: OVERLAP_AT });
  }

  write(send: SendToWrite): Promise<AcceptedWrite> {
    return this.batcher.submit(send);
  }
}
