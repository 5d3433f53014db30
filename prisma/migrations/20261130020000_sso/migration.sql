-- SSO with OpenID Connect (docs/teams.md): the issuer and subject a user signs in as.
ALTER TABLE "users" ADD COLUMN "oidc_issuer" TEXT,
ADD COLUMN "oidc_subject" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "users_oidc_issuer_oidc_subject_key" ON "users"("oidc_issuer", "oidc_subject");
