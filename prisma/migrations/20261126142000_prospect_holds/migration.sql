-- A step held past its due time by a sending window or a mailbox's limits (docs/outreach.md): when it was due, and the
-- next_at the hold set. A change of the schedule, the mailbox's limits or the prospect's time zone re-plans it from
-- held_due, as long as next_at is still held_next (anything else that moved next_at since ended the hold).
ALTER TABLE "prospects" ADD COLUMN "held_due" TIMESTAMPTZ(3),
ADD COLUMN "held_next" TIMESTAMPTZ(3);
