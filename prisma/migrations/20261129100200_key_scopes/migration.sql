-- Keys with scopes, allowed From domains and an end (docs/teams.md). Keys made before keep every scope.
ALTER TABLE "api_keys" ADD COLUMN "scopes" TEXT[] DEFAULT ARRAY['send', 'subscribers', 'prospects', 'templates', 'inbound', 'read']::TEXT[];
ALTER TABLE "api_keys" ADD COLUMN "domains" TEXT[] DEFAULT ARRAY[]::TEXT[];
ALTER TABLE "api_keys" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
