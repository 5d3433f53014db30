import crypto from 'node:crypto';
import { db, rawQuery } from '../../apps/core/src/db';
import { idFloor, newId } from '../../apps/core/src/ids';
import { insertArrival } from '../../apps/core/src/mx/repository';
import { createPartition } from '../../apps/core/src/partitions/repository';
import { makeTenant } from '../helpers/factories';

/**
 * Raw MIME and attachment bytes are compressed with lz4, not pglz (migration 20261203010000_raw_lz4); the MX's keeps a
 * raw of up to about 8 KB in its row (20261204010000_mx_raw_inline).
 */
const COLUMNS = [
  ['sends', 'raw'],
  ['sandbox_messages', 'raw'],
  ['inbound_messages', 'raw'],
  ['inbound_attachments', 'content'],
  ['mx_messages', 'raw'],
] as const;

/** Each relation of the table (itself, and each partition when it has them) with its column's compression ('l' is lz4). */
const compressionOf = (table: string, column: string) =>
  rawQuery<{ relation: string; compression: string }>(
    db(),
    `SELECT t.relid::regclass::text AS relation, a.attcompression::text AS compression
       FROM (SELECT $1::regclass AS relid UNION SELECT relid FROM pg_partition_tree($1::regclass)) t
       JOIN pg_attribute a ON a.attrelid = t.relid AND a.attname = $2`,
    [table, column],
  );

it('compresses every raw MIME column with lz4, on each table and each of its partitions', async () => {
  for (const [table, column] of COLUMNS) {
    const relations = await compressionOf(table, column);
    expect(relations.filter((r) => r.compression !== 'l')).toEqual([]);
  }
  // the partitioned ones have their partitions in the tree
  expect((await compressionOf('mx_messages', 'raw')).some((r) => r.relation === 'mx_messages_default')).toBe(true);
});

it('gives a partition housekeeping makes later the lz4 of its table', async () => {
  const name = 'mx_messages_p20991201';
  try {
    await createPartition(db(), 'mx_messages', name, idFloor(Date.parse('2099-12-01T00:00:00Z')), idFloor(Date.parse('2100-01-01T00:00:00Z')));
    expect((await compressionOf('mx_messages', 'raw')).find((r) => r.relation === name)).toEqual({ relation: name, compression: 'l' });
  } finally {
    await rawQuery(db(), `DROP TABLE IF EXISTS ${name}`);
  }
});

it('stores an arrival over the inline limit lz4-compressed, and its bytes read back whole', async () => {
  const id = newId();
  // a header and a text body that compress, over the 8 KB an MX raw may keep in its row
  const raw = Buffer.from(`From: ann@sender.example\r\nSubject: Hello\r\n\r\n${'Thanks for the order. '.repeat(400)}${crypto.randomUUID()}\r\n`);
  await arrive(id, raw);
  const [row] = await rawQuery<{ method: string; stored: number; raw: Buffer }>(
    db(),
    'SELECT pg_column_compression(raw) AS method, pg_column_size(raw) AS stored, raw FROM mx_messages WHERE id = $1::uuid',
    [id],
  );
  expect(row!.method).toBe('lz4');
  expect(row!.stored).toBeLessThan(raw.length / 4);
  expect(Buffer.compare(row!.raw, raw)).toBe(0);
});

/** Each partition of mx_messages with its toast_tuple_target (null when it has none). */
const toastTargets = () =>
  rawQuery<{ relation: string; target: string | null }>(
    db(),
    `SELECT t.relid::regclass::text AS relation,
            (SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) o WHERE o LIKE 'toast_tuple_target=%') AS target
       FROM pg_partition_tree('mx_messages'::regclass) t JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf`,
  );

/** The MX's arrival with the given id, its bytes `raw`, through the MX's own write. */
async function arrive(id: string, raw: Buffer): Promise<void> {
  const t = await makeTenant();
  const row = {
    id, accountId: t.account.id, routeId: null, domain: 'in.example', status: 'delivered' as const, reason: null, hash: null, mailFrom: 'ann@sender.example',
    rcptTo: ['x@in.example'], clientAddress: '127.0.0.1', helo: 'client', fromAddress: 'ann@sender.example', subject: 'Hello', auth: {}, spam: null, receivedAt: new Date(),
  };
  await insertArrival(db(), raw, [row], []);
}

it('keeps an MX raw of a few KB in its row: no compression, nothing in the TOAST table', async () => {
  const targets = await toastTargets();
  expect(targets.some((r) => r.relation === 'mx_messages_default')).toBe(true);
  expect(targets.filter((r) => r.target !== '8160')).toEqual([]);

  const name = 'mx_messages_p20991101';
  try {
    await createPartition(db(), 'mx_messages', name, idFloor(Date.parse('2099-11-01T00:00:00Z')), idFloor(Date.parse('2099-12-01T00:00:00Z')));
    expect((await toastTargets()).find((r) => r.relation === name)).toEqual({ relation: name, target: '8160' });
    // 3 KB of base64, as most mail's bodies are: past Postgres's usual 2 KB, and lz4 cannot shrink it
    const raw = Buffer.from(`From: ann@sender.example\r\nSubject: Hello\r\n\r\n${crypto.randomBytes(2200).toString('base64')}\r\n`);
    const id = idFloor(Date.parse('2099-11-02T00:00:00Z'));
    await arrive(id, raw);
    const [row] = await rawQuery<{ method: string | null; raw: Buffer }>(db(), 'SELECT pg_column_compression(raw) AS method, raw FROM mx_messages WHERE id = $1::uuid', [id]);
    expect(row!.method).toBeNull();
    expect(Buffer.compare(row!.raw, raw)).toBe(0);
    // the partition's TOAST table holds nothing: the raw was not moved out of the row
    const [toast] = await rawQuery<{ name: string }>(db(), 'SELECT reltoastrelid::regclass::text AS name FROM pg_class WHERE oid = $1::regclass', [name]);
    expect(await rawQuery(db(), `SELECT 1 FROM ${toast!.name}`)).toEqual([]);
    // and one past 8 KB is moved out as before
    await arrive(idFloor(Date.parse('2099-11-03T00:00:00Z')), Buffer.from(crypto.randomBytes(9000).toString('base64')));
    expect((await rawQuery(db(), `SELECT 1 FROM ${toast!.name}`)).length).toBeGreaterThan(0);
  } finally {
    await rawQuery(db(), `DROP TABLE IF EXISTS ${name}`);
  }
});
