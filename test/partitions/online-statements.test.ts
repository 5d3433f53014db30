import { readMigrations } from '../../apps/core/src/migrate';
import { aroundSwap, withoutDone } from '../../apps/core/src/upgrade/swap';
import { PLANS, statementsOf } from '../../apps/core/src/upgrade/tables';

/**
 * What the migration runner runs of 20261130040000 and 20261202050100 over a finished preparation (docs/partitions.md,
 * "Online"): each statement the preparation did is left out, nothing else. test/partitions/online-upgrade.test.ts
 * runs them against a database; this names them.
 */
const sqlOf = (name: string) => readMigrations().find((m) => m.name === name)!.sql;
const firstLines = (text: string) => statementsOf(text).map((s) => s.split('\n')[0]);

it('splits a migration into its statements, a $$ body with its semicolons as one', () => {
  expect(statementsOf('-- a comment\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n  SELECT 1;\n$$;\n\nDO $$\nBEGIN\n  PERFORM 1;\nEND\n$$;\nSELECT 2;\n'))
    .toEqual(['CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$\n  SELECT 1;\n$$;', 'DO $$\nBEGIN\n  PERFORM 1;\nEND\n$$;', 'SELECT 2;']);
});

it('runs 20261130040000 over a prepared mx_messages as its ADD COLUMN alone', () => {
  const ahead = PLANS.flatMap((p) => p.tables).find((t) => t.table === 'mx_messages')!.ahead!;
  expect(firstLines(withoutDone(ahead, sqlOf(ahead.migration)))).toEqual(['ALTER TABLE "mx_messages" ADD COLUMN "delivered_at" TIMESTAMPTZ(3);']);
});

it('runs 20261202050100 over a prepared inbound_messages without its copies and rewrites, the swap where it makes the new table', () => {
  const plan = PLANS.find((p) => p.migration === '20261202050100_inbound_partitions')!;
  const { before, after } = aroundSwap(plan, plan.statements!, sqlOf(plan.migration));
  expect(firstLines(before)).toEqual([
    'CREATE FUNCTION inbound_id() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS $$',
    'ALTER TABLE "inbound_attachments" DROP CONSTRAINT "inbound_attachments_inbound_message_id_fkey";',
    'ALTER TABLE "inbound_messages" RENAME TO "inbound_messages_legacy";',
    'ALTER TABLE "inbound_messages_legacy" RENAME CONSTRAINT "inbound_messages_pkey" TO "inbound_messages_legacy_pkey";',
    'ALTER TABLE "inbound_messages_legacy" RENAME CONSTRAINT "inbound_messages_mailbox_id_fkey" TO "inbound_messages_legacy_mailbox_id_fkey";',
    'ALTER INDEX "inbound_messages_mailbox_id_uid_validity_uid_key" RENAME TO "inbound_messages_legacy_uid_key";',
    'ALTER INDEX "inbound_messages_mailbox_id_id_idx" RENAME TO "inbound_messages_legacy_mailbox_id_id_idx";',
  ]);
  expect(firstLines(after)).toEqual([
    'ALTER SEQUENCE "inbound_messages_id_seq" OWNED BY "inbound_messages"."id";',
    'ALTER TABLE "inbound_messages" ALTER COLUMN "id" SET DEFAULT inbound_id();',
    'DROP TABLE "inbound_messages_legacy";',
    expect.stringMatching(/^ALTER TABLE "inbound_messages" ADD CONSTRAINT "inbound_messages_mailbox_id_fkey" FOREIGN KEY/),
    expect.stringMatching(/^ALTER TABLE "inbound_attachments" ADD CONSTRAINT "inbound_attachments_inbound_message_id_fkey" FOREIGN KEY/),
    expect.stringMatching(/^ALTER TABLE "inbound_uids" ADD CONSTRAINT "inbound_uids_mailbox_id_fkey" FOREIGN KEY/),
    expect.stringMatching(/^ALTER TABLE "inbound_uids" ADD CONSTRAINT "inbound_uids_inbound_message_id_fkey" FOREIGN KEY/),
  ]);
});

it('refuses a migration text without a statement the preparation stands in for', () => {
  const plan = PLANS.find((p) => p.migration === '20261202050100_inbound_partitions')!;
  const text = sqlOf(plan.migration).replace('INSERT INTO "inbound_uids"', 'INSERT INTO "inbound_uid_claims"');
  expect(() => aroundSwap(plan, plan.statements!, text)).toThrow('has no statement `INSERT INTO "inbound_uids"...`');
});
