-- The audit log stays append-only (docs/teams.md), with one exception: retention (AUDIT_RETENTION_DAYS). Its delete runs
-- in a transaction that first sets `mailservice.audit_prune_before` (SET LOCAL, so it ends with that transaction) to
-- its cut-off; only entries older than that cut-off may then be deleted. UPDATE stays refused always.
CREATE OR REPLACE FUNCTION "audit_log_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  cutoff TEXT := current_setting('mailservice.audit_prune_before', true);
BEGIN
  IF TG_OP = 'DELETE' AND cutoff IS NOT NULL AND cutoff <> '' AND OLD."at" < cutoff::timestamptz THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
