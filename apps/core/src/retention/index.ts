import { config } from '../config';
import type { Db } from '../db';
import { logger } from '../logger';
import { dropOldPartitions } from '../partitions';
import { BATCH, OLD_MESSAGES, OLD_SENDS, RECORD_RULES, clearMessageContent, clearSendContent, deleteOldBatch, type OldRows } from './repository';

/** One run clears at most this many batches of each table; the next run (hourly) goes on. */
const MAX_BATCHES = 100;

/**
 * The retention task (RETENTION_DAYS, default 30; 0 keeps everything): emails finished that long ago lose their content
 * (text, html, attachments) and keep their row: who, when, status, the SMTP answer, the Message-ID. A Send's content
 * (shared by its copies) goes once every copy is finished and old enough; a confirmation, sequence or broadcast email's
 * own content with its row. Batched and idempotent: cleared rows no longer match.
 */
export async function dropOldContent(db: Db, now = new Date()): Promise<{ messages: number; sends: number }> {
  const days = config().retentionDays;
  if (days <= 0) return { messages: 0, sends: 0 };
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  let messages = 0;
  let sends = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await clearMessageContent(db, cutoff);
    messages += rows.length;
    if (rows.length < BATCH) break;
  }
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await clearSendContent(db, cutoff);
    sends += rows.length;
    if (rows.length < BATCH) break;
  }
  if (messages || sends) logger.info({ messages, sends, days }, 'retention: content of old emails dropped');
  return { messages, sends };
}

/** The partitioned tables whose rows RETENTION_DAYS ends (messages' are MESSAGE_ROWS_DAYS'). */
const RETENTION_DAYS_PARTITIONED = ['events', 'message_attempts', 'link_clicks', 'message_opens', 'mx_messages', 'inbound_messages'] as const;

/** Rows deleted by table (rule name), and `partitions`: the partitions dropped whole (their rows are not counted). */
export type DroppedRecords = Record<(typeof RECORD_RULES)[number]['name'] | 'messages' | 'sends' | 'partitions', number>;

/**
 * RETENTION_DAYS (0 keeps everything) for the records of RECORD_RULES, and MESSAGE_ROWS_DAYS (0, the default, keeps
 * them) for the rows of finished emails and their Sends themselves (the rules: repository.ts). The time-partitioned
 * tables (partitions/) first lose their partitions wholly past the line, dropped; only what is left (the partition that
 * straddles the line, the default one) is deleted from, in batches by physical row (ctid) or by key, so one statement
 * shape serves every table.
 */
export async function dropOldRecords(db: Db, now = new Date()): Promise<DroppedRecords> {
  const { retentionDays, messageRowsDays } = config();
  const dropped = { messages: 0, sends: 0, partitions: 0 } as DroppedRecords;
  for (const rule of RECORD_RULES) dropped[rule.name as keyof DroppedRecords] = 0;
  const partitions: string[] = [];
  if (retentionDays > 0) {
    const cutoff = new Date(now.getTime() - retentionDays * 86_400_000);
    for (const table of RETENTION_DAYS_PARTITIONED) partitions.push(...(await dropOldPartitions(db, table, cutoff)));
    for (const rule of RECORD_RULES) dropped[rule.name as keyof DroppedRecords] = await deleteInBatches(db, rule, cutoff);
  }
  if (messageRowsDays > 0) {
    const cutoff = new Date(now.getTime() - messageRowsDays * 86_400_000);
    partitions.push(...(await dropOldPartitions(db, 'messages', cutoff)));
    dropped.messages = await deleteInBatches(db, OLD_MESSAGES, cutoff);
    dropped.sends = await deleteInBatches(db, OLD_SENDS, cutoff);
  }
  dropped.partitions = partitions.length;
  const total = Object.values(dropped).reduce((a, b) => a + b, 0);
  if (total) logger.info({ ...dropped, dropped: partitions, retentionDays, messageRowsDays }, 'retention: old records dropped');
  return dropped;
}

async function deleteInBatches(db: Db, rule: OldRows, cutoff: Date): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await deleteOldBatch(db, rule, cutoff);
    deleted += n;
    if (n < BATCH) break;
  }
  return deleted;
}
