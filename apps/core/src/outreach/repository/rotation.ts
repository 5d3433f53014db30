import { rawQuery, type Tx } from '../../db';
import { isDeadBounce } from './verdicts';

/** The mailbox rotation's SQL (rotation.ts): which mailbox a step goes out from, and the campaign's rotation itself. */

export interface RotationCandidate {
  id: number;
  address: string;
  active: boolean;
  paused: boolean;
  over_bounce: boolean;
}

/**
 * The mailboxes a step of the campaign may go out from: the rotation's (active first, in turn: fewest outreach emails
 * today, then idle longest, then the order given), and the prospect's own (`own`) even when taken out of the rotation.
 * `over_bounce`: over its last `window` ended outreach emails (at least 20), the share of dead bounces passes
 * `bounceRate` (the campaign's pause_on rate); read only when the rotation has a choice to make.
 */
export function rotationCandidates(tx: Tx, campaignId: number, own: number | null, bounceRate: number | null, window: number): Promise<RotationCandidate[]> {
  return rawQuery<RotationCandidate>(
    tx,
    `WITH list AS (
       SELECT cm.mailbox_id AS id, cm.active, cm.position FROM campaign_mailboxes cm WHERE cm.campaign_id = $1
       UNION ALL
       SELECT c.mailbox_id, true, 0 FROM campaigns c WHERE c.id = $1
         AND NOT EXISTS (SELECT 1 FROM campaign_mailboxes cm WHERE cm.campaign_id = c.id AND cm.mailbox_id = c.mailbox_id)
       UNION ALL
       SELECT $2::int, false, 0 WHERE $2::int IS NOT NULL
     ), chosen AS (
       SELECT DISTINCT ON (id) id, active, position FROM list ORDER BY id, active DESC
     ), sized AS (
       SELECT ch.*, count(*) FILTER (WHERE ch.active) OVER () AS size FROM chosen ch
     )
     -- a mailbox that needs reconnecting (OAuth2 consent refused) is passed over like a paused one: its steps wait
     SELECT m.id, m.address, s.active, (m.paused OR m.auth_status = 'needs_reconnect') AS paused,
       CASE WHEN s.size > 1 AND $3::float8 IS NOT NULL AND $2::int IS NULL THEN coalesce((
         SELECT w.ended >= 20 AND w.dead::float8 / w.ended > $3::float8 FROM (
           SELECT count(*)::int AS ended, count(*) FILTER (WHERE x.dead)::int AS dead FROM (
             SELECT ${isDeadBounce('e')} AS dead FROM messages e
             WHERE e.mailbox_id = m.id AND e.kind = 'sequence' AND e.status IN ('sent', 'bounced', 'failed')
             ORDER BY e.created_at DESC LIMIT $4::int) x) w), false)
       ELSE false END AS over_bounce
     FROM sized s JOIN mailboxes m ON m.id = s.id
     ORDER BY s.active DESC,
       CASE WHEN m.sequence_day = (clock_timestamp() AT TIME ZONE 'UTC')::date THEN m.sequence_count ELSE 0 END,
       m.sequence_last_at NULLS FIRST, s.position, m.id`,
    [campaignId, own, bounceRate, Math.trunc(window)],
  );
}

/** The campaign's rotation becomes these mailboxes, active in this order; any other it had stays, inactive. */
export async function setCampaignMailboxes(tx: Tx, campaignId: number, mailboxes: number[]): Promise<void> {
  await rawQuery(tx, `UPDATE campaign_mailboxes SET active = false WHERE campaign_id = $1 AND NOT (mailbox_id = ANY($2::int[]))`, [campaignId, mailboxes]);
  await rawQuery(
    tx,
    `INSERT INTO campaign_mailboxes (campaign_id, mailbox_id, position, active)
     SELECT $1, m.id, m.position, true FROM unnest($2::int[]) WITH ORDINALITY AS m(id, position)
     ON CONFLICT (campaign_id, mailbox_id) DO UPDATE SET position = excluded.position, active = true`,
    [campaignId, mailboxes],
  );
}

/** The campaign's rotation: its active mailboxes in order, and those taken out that still finish prospects. */
export function campaignMailboxes(tx: Tx, campaignId: number): Promise<{ mailbox_id: number; active: boolean }[]> {
  return rawQuery<{ mailbox_id: number; active: boolean }>(
    tx,
    `SELECT mailbox_id, active FROM campaign_mailboxes WHERE campaign_id = $1 ORDER BY active DESC, position, mailbox_id`,
    [campaignId],
  );
}
