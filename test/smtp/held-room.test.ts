import { HeldRoom } from '../../apps/core/src/submission/held-room';

/** The bytes of DATA an SMTP process holds at once (submission/held-room.ts). */
const LONG = 60_000;
const settled = () => new Promise((resolve) => setImmediate(resolve));

it('gives room while it lasts; then the message holding the most reads on past it, and what it frees goes to the others', async () => {
  const room = new HeldRoom(4);
  const [a, b, c] = [room.open(), room.open(), room.open()];
  for (const share of [a, b, c]) expect(await room.take(share, 1, LONG)).toBe(true);
  expect(await room.take(a, 1, LONG)).toBe(true);
  expect(room.held).toBe(4);
  // full: b and c each hold part of it and wait for more
  const got: string[] = [];
  const bWaits = room.take(b, 1, LONG).then((ok) => got.push(`b ${ok}`));
  const cWaits = room.take(c, 1, LONG).then((ok) => got.push(`c ${ok}`));
  await settled();
  expect(got).toEqual([]);
  // a holds the most: it does not wait on them
  expect(await room.take(a, 1, LONG)).toBe(true);
  expect(room.held).toBe(5);
  room.release(a);
  await Promise.all([bWaits, cWaits]);
  expect(got).toEqual(['b true', 'c true']);
  expect([b.held, c.held, room.held]).toEqual([2, 2, 4]);
});

it('serves the message furthest along first, whoever asked first', async () => {
  const room = new HeldRoom(3);
  const [a, late, early] = [room.open(), room.open(), room.open()];
  expect(await room.take(a, 2, LONG)).toBe(true);
  expect(await room.take(late, 1, LONG)).toBe(true);
  const got: string[] = [];
  // `early` (nothing held) asks before `late` (one held): both wait, a holding the most and not asking
  const earlyWaits = room.take(early, 1, LONG).then(() => got.push('early'));
  const lateWaits = room.take(late, 1, LONG).then(() => got.push('late'));
  await settled();
  expect(got).toEqual([]);
  room.release(a);
  await Promise.all([earlyWaits, lateWaits]);
  expect(got).toEqual(['late', 'early']);
});

it('answers false once the wait is over, with nothing taken, and serves those behind', async () => {
  const room = new HeldRoom(2);
  const [a, b] = [room.open(), room.open()];
  expect(await room.take(a, 2, LONG)).toBe(true);
  // a holds the most but is not reading (its client is slow): b waits, then is told to read on anyway
  expect(await room.take(b, 1, 20)).toBe(false);
  expect([b.held, room.held]).toEqual([0, 2]);
  room.release(a);
  room.release(b);
  expect(room.held).toBe(0);
});
