import { config } from './config';
import { rawQuery, type Db } from './db';
import { logger } from './logger';

/** Rows a statement clears at most: a big backlog is cleared over several statements, none holding many locks long. */
const BATCH = 1_000;
/** One run clears at most this many batches of each table; the next run (hourly) goes on. */
const MAX_BATCHES = 100;

/** Final states: nothing will read the content of such an email again to send it. */
const FINAL = `('sent', 'failed', 'bounced', 'cancelled')`;

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
    const rows = await rawQuery<{ id: string }>(
      db,
      `UPDATE messages SET text = NULL, html = NULL, updated_at = now()
       WHERE id IN (SELECT id FROM messages WHERE status IN ${FINAL} AND updated_at < $1 AND (text IS NOT NULL OR html IS NOT NULL) LIMIT ${BATCH})
       RETURNING id`,
      [cutoff],
    );
    messages += rows.length;
    if (rows.length < BATCH) break;
  }
  for (let i = 0; i < MAX_BATCHES; i++) {
    const rows = await rawQuery<{ id: string }>(
      db,
      `UPDATE sends s SET text = NULL, html = NULL, attachments = '[]'
       WHERE s.id IN (
         SELECT s2.id FROM sends s2
         WHERE s2.created_at < $1 AND (s2.text IS NOT NULL OR s2.html IS NOT NULL OR s2.attachments <> '[]'::jsonb)
           AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.send_id = s2.id AND (m.status NOT IN ${FINAL} OR m.updated_at >= $1))
         LIMIT ${BATCH})
       RETURNING s.id`,
      [cutoff],
    );
    sends += rows.length;
    if (rows.length < BATCH) break;
  }
  if (messages || sends) logger.info({ messages, sends, days }, 'retention: content of old emails dropped');
  return { messages, sends };
}
