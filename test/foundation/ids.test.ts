import { newId } from '../../apps/core/src/ids';

describe('newId: time-ordered UUIDs (version 7)', () => {
  it('is a version 7, variant 10 UUID that Postgres accepts', () => {
    const id = newId();
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('carries the time it was made in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 25, 12, 0, 0, 123);
    const id = newId(at);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });

  it('sorts by time: an id of a later millisecond is greater, as text and as Postgres orders uuids', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => newId(1_700_000_000_000 + i * 7));
    expect([...ids].sort()).toEqual(ids);
  });

  it('is random past the time: 10,000 ids of one millisecond are all different', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId(1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
  });
});
