import { defineConfig } from 'prisma/config';

// The CLI is used for `prisma generate` only; migrations run through scripts/migrate.ts (see docs/DEVELOPERS.md).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/mailservice' },
});
