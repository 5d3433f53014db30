import { autoPauseAfter } from '../outreach/auto-pause';
import type { Mailbox, Prospect } from '../../../../generated/prisma/client';
import type { InboundKind, ProspectStatus } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';
import { emitEvent } from '../events';
import { emitProspectChange } from '../outreach/changes';
import { answerBranch } from '../outreach/paths';
import { metrics } from '../metrics';
import { addToStopList } from '../stop-list/repository';
import { bounceClass, bounceColumn } from '../analytics/bounces';
import { countMessage } from '../analytics/repository';
import { OPEN_STATUSES } from '../outreach/outcomes';
import { lockProspect } from '../outreach/repository/prospects';
import { suppressAddress } from '../suppressions/suppress';
import type { InboundMail } from './classify';
import { applyBounce, bounceOf, countBounce, publicBounce } from './bounce-policy';
import { provenBounce, provenComplaint } from './proof';
import { recordReceived } from './received';
import { advanceCursor, claimInbound, messageById, messageByMessageIds, type OurMessage } from './repository';

/**
 * One inbound email's effects (docs/inbound.md), in ONE transaction that first claims it: the row of inbound_messages unique
 * on (mailbox, uidvalidity, uid) is inserted ON CONFLICT DO NOTHING, so a second reader (or the same one after a
 * restart) finds it taken and does nothing. The mailbox's cursor moves on in the same transaction.
 */
export interface Where {
  mailbox: Mailbox;
  uidValidity: bigint;
  uid: bigint;
  /** the email as read (kept when it is not valid MIME) */
  raw?: Buffer;
}

const DAY_MS = 86_400_000;

/** The mailbox's latest message among these Message-IDs (none asked: none found). */
async function byMessageIds(tx: Tx, mailboxId: number, messageIds: string[]): Promise<OurMessage | null> {
  if (!messageIds.length) return null;
  return messageByMessageIds(tx, mailboxId, messageIds);
}

async function lockedProspect(tx: Tx, id: number): Promise<Prospect | null> {
  return (await lockProspect(tx, id)) ? tx.prospect.findUnique({ where: { id } }) : null;
}

async function changeProspect(tx: Tx, before: Prospect, data: Partial<Pick<Prospect, 'status' | 'reason' | 'reply' | 'repliedAt' | 'nextAt' | 'closedAt' | 'node' | 'nodeSince'>>): Promise<void> {
  const after = await tx.prospect.update({ where: { id: before.id }, data });
  const campaign = await tx.campaign.findUniqueOrThrow({ where: { id: before.campaignId }, select: { id: true, accountId: true, stages: true } });
  await emitProspectChange(tx, campaign, before.status as ProspectStatus, after);
}

/** UTC midnight of the day after `day`, or 7 days after `from`. */
export function resumeAt(returnDate: Date | null, from: Date): Date {
  return returnDate ? new Date(returnDate.getTime() + DAY_MS) : new Date(from.getTime() + 7 * DAY_MS);
}

export interface Handled {
  kind: InboundKind;
  prospectId: number | null;
  /** a report that proved no message of ours: why (recorded, not applied) */
  unmatched: string | null;
}

/** Handles one email exactly once; null when another reader (or an earlier run) already did. */
export async function handleInbound(db: Db, where: Where, mail: InboundMail, now = new Date()): Promise<Handled | null> {
  const handled = await handleOnce(db, where, mail, now);
  if (handled) metrics.inboundMessages.inc({ kind: handled.kind });
  if (handled?.unmatched) metrics.inboundUnmatched.inc({ kind: handled.kind });
  return handled;
}

async function handleOnce(db: Db, where: Where, mail: InboundMail, now: Date): Promise<Handled | null> {
  const { mailbox, uidValidity, uid } = where;
  return db.$transaction(
    async (tx) => {
      const claimed = await claimInbound(tx, { mailboxId: mailbox.id, uidValidity, uid, from: mail.from, subject: mail.subject.slice(0, 998), messageId: mail.messageId, receivedAt: now });
      await advanceCursor(tx, mailbox.id, uidValidity, uid);
      if (claimed === undefined) return null;

      const result = await effects(tx, mailbox, mail, now);
      await tx.inboundMessage.update({
        where: { id: claimed },
        data: { kind: result.kind, prospectId: result.prospectId, relatedId: result.relatedId, detail: result.detail.slice(0, 2000), reason: result.reason, unmatched: result.unmatched },
      });
      // a reply or a message (not a report) is handed on as message.received, once: this transaction claimed it
      if (!mail.report) await recordReceived(tx, claimed, mailbox, mail, { kind: result.kind, prospectId: result.prospectId, relatedId: result.relatedId }, where.raw, now);
      // recorded first: the complaint counts in its campaign's or broadcast's auto-pause window (docs/outreach.md)
      if (result.relatedId && (result.kind === 'bounce' || result.kind === 'complaint')) await autoPauseAfter(tx, result.relatedId);
      return { kind: result.kind, prospectId: result.prospectId, unmatched: result.unmatched };
    },
    { timeout: 20_000, maxWait: 15_000 },
  );
}

async function effects(tx: Tx, mailbox: Mailbox, mail: InboundMail, now: Date) {
  const accountId = mailbox.accountId;

  if (mail.report && mail.kind === 'complaint') {
    const report = mail.report;
    const proven = await provenComplaint(tx, mailbox, mail);
    if ('unmatched' in proven) return { kind: 'complaint' as InboundKind, prospectId: null, relatedId: null, detail: report.feedbackType ?? '', reason: null, unmatched: proven.unmatched };
    const ours = proven.message;
    const address = ours.to.toLowerCase();
    await suppressAddress(tx, accountId, address, 'complained', report.feedbackType ?? '', null, now);
    await addToStopList(tx, accountId, address);
    await countMessage(tx, ours.id, 'complained');
    await emitEvent(tx, accountId, 'message.complained', { id: ours.id, mailbox: mailbox.id, to: address });
    return { kind: 'complaint' as InboundKind, prospectId: ours.prospect_id, relatedId: ours.id, detail: report.feedbackType ?? '', reason: null, unmatched: null };
  }

  if (mail.report) {
    // a bounce acts on the one message it proves, for that message's recipient; a report naming nobody is recorded
    const report = mail.report;
    const detail = [report.status, report.diagnostic].filter(Boolean).join(' ');
    const proven = await provenBounce(tx, mailbox, mail);
    if ('unmatched' in proven) return { kind: 'bounce' as InboundKind, prospectId: null, relatedId: null, detail, reason: report.reason ?? 'undefined', unmatched: proven.unmatched };
    const { message, recipients } = proven;
    for (const failed of recipients) {
      const bounce = bounceOf(failed, now);
      if (!failed.permanent) {
        countBounce(bounce, false);
        continue; // 4.x.x or delayed: recorded only
      }
      const address = message.to.toLowerCase();
      await applyBounce(tx, accountId, message.id, address, bounce);
      await countMessage(tx, message.id, bounceColumn(bounceClass({ dead: bounce.dead })));
      await tx.message.update({ where: { id: message.id }, data: { status: 'bounced', lastError: [failed.status, failed.diagnostic].filter(Boolean).join(' ') || 'bounced' } });
      await emitEvent(tx, accountId, 'message.bounced', {
        id: message.id,
        mailbox: mailbox.id,
        to: address,
        status: failed.status,
        diagnostic: [failed.status, failed.diagnostic].filter(Boolean).join(' '),
        bounce: publicBounce(bounce),
      });
    }
    return { kind: 'bounce' as InboundKind, prospectId: message.prospect_id, relatedId: message.id, detail, reason: report.reason ?? 'undefined', unmatched: null };
  }

  // a reply or auto-reply acts only when it proves which email of ours it answers, as a report must: (1) a Message-ID of
  // ours in In-Reply-To / References, or (2) a valid VERP address of ours it came to (RFC 3834 answers the envelope
  // sender). A From: naming a prospect proves nothing: anybody can write it (docs/inbound.md)
  const ours = (await byMessageIds(tx, mailbox.id, mail.threadIds)) ?? (mail.verp ? await messageById(tx, mailbox.id, mail.verp) : null);
  const prospect = ours?.prospect_id ? await lockedProspect(tx, ours.prospect_id) : null;
  if (!prospect) return { kind: 'other' as InboundKind, prospectId: null, relatedId: ours?.id ?? null, detail: '', reason: null, unmatched: null };
  const base = { prospectId: prospect.id, relatedId: ours?.id ?? null, reason: null, unmatched: null };

  if (mail.kind === 'auto_reply') {
    if (prospect.status === 'ready' || prospect.status === 'writing') {
      // waiting at a condition on this answer, the prospect goes on along its branch now (outreach/branches.ts)
      const branch = await answerBranch(tx, prospect, mail.returnDate ? 'out_of_office' : 'auto_reply', now);
      const nextAt = resumeAt(mail.returnDate, mail.date > now ? now : mail.date);
      await changeProspect(tx, prospect, { status: 'later', reply: 'auto', nextAt, ...branch });
    }
    return { ...base, kind: 'auto_reply' as InboundKind, detail: mail.returnDate ? `back ${mail.returnDate.toISOString().slice(0, 10)}` : '' };
  }
  const open = OPEN_STATUSES.includes(prospect.status) || (prospect.status === 'lost' && prospect.reason === 'no_reply');
  const branch = open ? await answerBranch(tx, prospect, 'reply', now) : null;
  if (open) await changeProspect(tx, prospect, { status: 'replied', reason: '', reply: 'human', repliedAt: mail.date, nextAt: null, closedAt: null, ...(branch ? { node: branch.node, nodeSince: branch.nodeSince } : {}) });
  return { ...base, kind: 'reply' as InboundKind, detail: '' };
}
