import { db } from '../../apps/core/src/db';
import { deliveryRegistrations } from '../../apps/core/src/email-kinds';
import { guardedKinds } from '../../apps/core/src/delivery/guards';
import { FastClaims } from '../../apps/core/src/delivery/fast-claim';
import { makeTenant } from '../helpers/factories';
import { writtenCopies } from './helpers';

/**
 * Every email is written three times (queued, sending, sent), and each write puts an entry into every index of its
 * partition whose rows it belongs to. Two indexes hold only the rows their readers look for (migration
 * 20261205010000): (prospect_id, step) sequence emails and (broadcast_id, subscriber_id) broadcast copies. Read here
 * off the indexes' own pages (pageinspect), against (status, created_at), which holds every version.
 */

const claims = new FastClaims(db(), deliveryRegistrations().kinds);

beforeAll(async () => {
  // this file's own database (test/setup/per-file.ts): the extension goes with it
  await db().$executeRawUnsafe('CREATE EXTENSION IF NOT EXISTS pageinspect');
});

/** The heap tuples the leaf pages of `index` point at, as ctid text ("(0,1)"). */
async function pointedAt(index: string): Promise<Set<string>> {
  const rows = await db().$queryRawUnsafe<{ tid: string }[]>(
    `SELECT t::text AS tid
       FROM generate_series(1, (pg_relation_size($1::text::regclass) / current_setting('block_size')::int - 1)::int) b,
            LATERAL bt_page_items($1::text, b) i, unnest(coalesce(i.tids, array[i.htid])) t
      WHERE (bt_page_stats($1::text, b)).type = 'l' AND i.htid IS NOT NULL`,
    index,
  );
  return new Set(rows.map((r) => r.tid));
}

const versionOf = async (id: string) =>
  (await db().$queryRawUnsafe<{ partition: string; ctid: string }[]>(`SELECT tableoid::regclass::text AS partition, ctid::text FROM messages WHERE id = $1::uuid`, id))[0]!;

it('leaves every version of an API send out of the prospect and broadcast indexes', async () => {
  const tenant = await makeTenant();
  const [id] = [...(await writtenCopies(tenant, ['partial@example.org'])).values()];
  const queued = await versionOf(id!);
  expect(await claims.claimUnguarded(id!, 60_000, guardedKinds(deliveryRegistrations().kinds.guards))).toMatchObject({ id });
  const sending = await versionOf(id!);
  await claims.markSent({ id: id!, kind: 'transactional' }, '250 ok');
  const sent = await versionOf(id!);
  expect(new Set([queued.ctid, sending.ctid, sent.ctid]).size).toBe(3);

  const index = (suffix: string) => pointedAt(`${queued.partition}_${suffix}`);
  const everyVersion = await index('status_created_at_idx');
  expect([queued, sending, sent].every((v) => everyVersion.has(v.ctid))).toBe(true);
  for (const suffix of ['prospect_id_step_idx', 'broadcast_id_subscriber_id_idx']) {
    const held = await index(suffix);
    expect([queued, sending, sent].filter((v) => held.has(v.ctid))).toEqual([]);
  }
});
