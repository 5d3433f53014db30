import { rawQuery, type Tx } from '../../db';

/** The branches and A/B variants of a sequence (branches.ts, paths.ts, experiments/). */

/**
 * What happened to the prospect from `since` until `until` (the condition's end) that a condition asks about: a person's reply (read, or reported by the
 * caller), an auto-reply, an out-of-office (an auto-reply naming the day its writer is back: inbound/handle.ts), a
 * click of a person (not a scanner) on one of its emails.
 */
export async function conditionFacts(tx: Tx, prospectId: number, since: Date, until: Date): Promise<{ replied: boolean; clicked: boolean; auto_replied: boolean; out_of_office: boolean }> {
  const [facts] = await rawQuery<{ replied: boolean; clicked: boolean; auto_replied: boolean; out_of_office: boolean }>(
    tx,
    `SELECT EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'reply' AND i.received_at >= $2 AND i.received_at < $3)
              OR (p.reply IN ('human', 'reported') AND p.replied_at >= $2 AND p.replied_at < $3) AS replied,
            EXISTS (SELECT 1 FROM link_clicks c JOIN messages m ON m.id = c.message_id
                    WHERE m.prospect_id = p.id AND NOT c.scanner AND c.at >= $2 AND c.at < $3) AS clicked,
            EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'auto_reply' AND i.received_at >= $2 AND i.received_at < $3) AS auto_replied,
            EXISTS (SELECT 1 FROM inbound_messages i WHERE i.prospect_id = p.id AND i.kind = 'auto_reply' AND i.received_at >= $2 AND i.received_at < $3
                    AND i.detail LIKE 'back %') AS out_of_office
     FROM prospects p WHERE p.id = $1`,
    [prospectId, since, until],
  );
  return facts ?? { replied: false, clicked: false, auto_replied: false, out_of_office: false };
}

export interface ArmCounts {
  variant: number;
  /** prospects sent that variant */
  sent: number;
  /** of them, those who replied (a person) after it, and those who clicked one of its links */
  replied: number;
  clicked: number;
  first_at: Date | null;
}

/** Per variant of a campaign step: who got it and who answered it (experiments/winner.ts judges on these). */
export function variantArms(tx: Tx, campaignId: number, key: string): Promise<ArmCounts[]> {
  return rawQuery<ArmCounts>(
    tx,
    `SELECT m.variant, count(*)::int AS sent,
            count(*) FILTER (WHERE p.reply IN ('human', 'reported') AND p.replied_at >= m.created_at)::int AS replied,
            count(*) FILTER (WHERE EXISTS (SELECT 1 FROM link_clicks c WHERE c.message_id = m.id AND NOT c.scanner))::int AS clicked,
            min(m.created_at) AS first_at
     FROM prospects p JOIN messages m ON m.prospect_id = p.id
     WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.step_key = $2 AND m.variant IS NOT NULL
     GROUP BY m.variant ORDER BY m.variant`,
    [campaignId, key],
  );
}

/** The test of a step found its winner: every later prospect gets that variant. */
export async function chooseVariant(tx: Tx, stepId: number, variant: number): Promise<void> {
  await rawQuery(tx, `UPDATE campaign_steps SET chosen_variant = $2 WHERE id = $1 AND chosen_variant IS NULL`, [stepId, variant]);
}

/** Per step key: the emails written, and the prospects waiting there now (an open prospect's place; "$end" past its path). */
export function nodeCounts(tx: Tx, campaignId: number): Promise<{ key: string; sent: number; waiting: number }[]> {
  return rawQuery<{ key: string; sent: number; waiting: number }>(
    tx,
    `WITH places AS (
       SELECT coalesce(p.node, s.key, '$end') AS key, count(*)::int AS n FROM prospects p
       LEFT JOIN campaign_steps s ON s.campaign_id = p.campaign_id AND s.position = p.step + 1
       WHERE p.campaign_id = $1 AND p.status IN ('ready', 'writing', 'later') GROUP BY 1
     ), sent AS (
       SELECT m.step_key AS key, count(*)::int AS n FROM prospects p JOIN messages m ON m.prospect_id = p.id
       WHERE p.campaign_id = $1 AND m.kind = 'sequence' AND m.step_key IS NOT NULL GROUP BY 1
     )
     SELECT coalesce(w.key, e.key) AS key, coalesce(e.n, 0) AS sent, coalesce(w.n, 0) AS waiting
     FROM places w FULL JOIN sent e ON e.key = w.key`,
    [campaignId],
  );
}

/**
 * Before a campaign's steps are replaced: every prospect under way that is placed by position gets the key of its
 * step (or "$end" past the last), so the edit keeps it where it is (branches.ts).
 */
export async function pinProspectPlaces(tx: Tx, campaignId: number): Promise<void> {
  await rawQuery(
    tx,
    `UPDATE prospects p SET node = coalesce(s.key, '$end'), node_since = coalesce(p.node_since, now())
     FROM prospects q LEFT JOIN campaign_steps s ON s.campaign_id = q.campaign_id AND s.position = q.step + 1
     WHERE p.id = q.id AND q.campaign_id = $1 AND q.node IS NULL AND q.step > 0 AND q.status IN ('ready', 'writing', 'later', 'hold')`,
    [campaignId],
  );
}

/**
 * A person's first click on a sequence email decides the condition its prospect waits at, when that condition asks
 * about clicks (branches.ts): the prospect's step comes due now. Answers the prospects moved (none for other emails).
 */
export function clickDueNow(tx: Tx, messageId: string): Promise<{ id: number; step: number; next_at: Date }[]> {
  return rawQuery<{ id: number; step: number; next_at: Date }>(
    tx,
    `UPDATE prospects p SET next_at = now(), held_due = NULL, held_next = NULL
     FROM messages m, campaign_steps s
     WHERE m.id = $1::uuid AND p.id = m.prospect_id AND s.campaign_id = p.campaign_id AND s.key = p.node
       AND s.kind = 'condition' AND s.condition->>'if' IN ('clicked', 'not_clicked')
       AND p.status IN ('ready', 'writing', 'later') AND p.next_at > now()
     RETURNING p.id, p.step, p.next_at`,
    [messageId],
  );
}
