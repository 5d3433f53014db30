-- The audit log (docs/teams.md): written in each change's transaction; no statement of the service updates or deletes it.
-- CreateTable
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor_kind" TEXT NOT NULL,
    "actor_id" INTEGER,
    "actor_label" TEXT NOT NULL,
    "via" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "resource_id" TEXT,
    "account_id" INTEGER,
    "before" JSONB,
    "after" JSONB,
    "ip" TEXT,
    "request_id" TEXT,

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "audit_log_actor_kind" CHECK ("actor_kind" IN ('user', 'key', 'admin-token')),
    CONSTRAINT "audit_log_via" CHECK ("via" IN ('admin-api', 'console', 'cli', 'mcp'))
);

-- CreateIndex
CREATE INDEX "audit_log_account_id_id_idx" ON "audit_log"("account_id", "id");

-- an entry, once written, stays as it was: UPDATE and DELETE are refused (TRUNCATE is left for a retention job)
CREATE FUNCTION "audit_log_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER "audit_log_append_only" BEFORE UPDATE OR DELETE ON "audit_log"
  FOR EACH ROW EXECUTE FUNCTION "audit_log_append_only"();
