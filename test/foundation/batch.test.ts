import { Batcher, Semaphore } from '../../apps/core/src/batch';

/** A run whose batches the test finishes by hand, recording what each batch held. */
function manualRun() {
  const batches: number[][] = [];
  const pending: (() => void)[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push(items);
      pending.push(() => (items.includes(13) && items.length ? reject(new Error('unlucky')) : resolve(items.map((i) => `done ${i}`))));
    });
  const finishAll = async () => {
    while (pending.length) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
  };
  return { batches, run, finishAll };
}

describe('Batcher (group commit)', () => {
  it('runs a lone call at once, and groups the calls that arrive while the batches in flight run', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 1, maxBatch: 10 });
    const first = batcher.submit(1);
    expect(m.batches).toEqual([[1]]);
    const rest = [2, 3, 4].map((i) => batcher.submit(i));
    expect(m.batches).toEqual([[1]]);
    await m.finishAll();
    expect(m.batches).toEqual([[1], [2, 3, 4]]);
    expect(await first).toBe('done 1');
    expect(await Promise.all(rest)).toEqual(['done 2', 'done 3', 'done 4']);
  });

  it('keeps at most maxInFlight batches running and at most maxBatch items in one', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 2, maxBatch: 3 });
    const all = Array.from({ length: 9 }, (_, i) => batcher.submit(i));
    expect(m.batches).toEqual([[0], [1]]);
    await m.finishAll();
    expect(m.batches).toEqual([[0], [1], [2, 3, 4], [5, 6, 7], [8]]);
    expect(await Promise.all(all)).toEqual(Array.from({ length: 9 }, (_, i) => `done ${i}`));
  });

  it('fails only the caller of a bad item: a failed batch runs again item by item', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 1, maxBatch: 10 });
    const first = batcher.submit(1);
    const group = [12, 13, 14].map((i) => batcher.submit(i).catch((err: Error) => err.message));
    await m.finishAll();
    expect(await first).toBe('done 1');
    expect(await Promise.all(group)).toEqual(['done 12', 'unlucky', 'done 14']);
    expect(m.batches).toEqual([[1], [12, 13, 14], [12], [13], [14]]);
  });
});

describe('Batcher: the next batch first', () => {
  it("writes the next batch before the callers of the one that ended go on, though its run starts on the next tick (as pg-pool's query does)", async () => {
    const events: string[] = [];
    const finish: (() => void)[] = [];
    const run = (items: number[]) =>
      new Promise<string[]>((resolve) => {
        // pg-pool hands out an idle connection on the next tick: only then is the statement written
        process.nextTick(() => events.push(`written ${items.join(',')}`));
        finish.push(() => resolve(items.map((i) => `done ${i}`)));
      });
    const batcher = new Batcher(run, { maxInFlight: 1, maxBatch: 10 });
    const first = batcher.submit(1).then((out) => events.push(`answered ${out}`));
    const rest = [2, 3].map((i) => batcher.submit(i).then((out) => events.push(`answered ${out}`)));
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['written 1']);
    finish.shift()!();
    await first;
    expect(events).toEqual(['written 1', 'written 2,3', 'answered done 1']);
    finish.shift()!();
    await Promise.all(rest);
    expect(events).toEqual(['written 1', 'written 2,3', 'answered done 1', 'answered done 2', 'answered done 3']);
  });
});

describe('Batcher with lingerMs', () => {
  it('waits that long for company before a batch starts, and starts a full batch at once', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 1, maxBatch: 3, lingerMs: 30 });
    const first = batcher.submit(1);
    expect(m.batches).toEqual([]);
    const second = batcher.submit(2);
    await new Promise((r) => setTimeout(r, 60));
    expect(m.batches).toEqual([[1, 2]]);
    await m.finishAll();
    expect(await Promise.all([first, second])).toEqual(['done 1', 'done 2']);

    const full = [3, 4, 5].map((i) => batcher.submit(i));
    expect(m.batches).toEqual([[1, 2], [3, 4, 5]]);
    await m.finishAll();
    expect(await Promise.all(full)).toEqual(['done 3', 'done 4', 'done 5']);
  });
});

describe('Batcher with gather', () => {
  it('puts the callers woken by one event in one batch, the first not alone; a lone caller waits no timer', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 1, maxBatch: 10, gather: true });
    // five callers that a committed statement wakes together, each submitting after an await of its own
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const woken = [1, 2, 3, 4, 5].map(async (i) => {
      await committed;
      return batcher.submit(i);
    });
    commit();
    await new Promise((r) => setImmediate(r));
    expect(m.batches).toEqual([[1, 2, 3, 4, 5]]);
    await m.finishAll();
    expect(await Promise.all(woken)).toEqual([1, 2, 3, 4, 5].map((i) => `done ${i}`));

    const lone = batcher.submit(6);
    await Promise.resolve();
    expect(m.batches).toEqual([[1, 2, 3, 4, 5], [6]]);
    await m.finishAll();
    expect(await lone).toBe('done 6');
  });

  it('without gather, the first of them goes alone', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 1, maxBatch: 10 });
    let commit!: () => void;
    const committed = new Promise<void>((resolve) => (commit = resolve));
    const woken = [1, 2, 3].map(async (i) => {
      await committed;
      return batcher.submit(i);
    });
    commit();
    await new Promise((r) => setImmediate(r));
    expect(m.batches).toEqual([[1]]);
    await m.finishAll();
    expect(m.batches).toEqual([[1], [2, 3]]);
    await Promise.all(woken);
  });
});

describe('Batcher with overlapAt', () => {
  it('starts a batch beside the one in flight only once that many calls wait', async () => {
    const m = manualRun();
    const batcher = new Batcher(m.run, { maxInFlight: 2, maxBatch: 10, overlapAt: 3 });
    const calls = [batcher.submit(1), batcher.submit(2), batcher.submit(3)];
    // one in flight, two waiting: fewer than 3, so they wait for it
    expect(m.batches).toEqual([[1]]);
    calls.push(batcher.submit(4));
    expect(m.batches).toEqual([[1], [2, 3, 4]]);
    // two in flight: the next waits whatever the count
    calls.push(...[5, 6, 7].map((i) => batcher.submit(i)));
    expect(m.batches).toEqual([[1], [2, 3, 4]]);
    await m.finishAll();
    expect(m.batches).toEqual([[1], [2, 3, 4], [5, 6, 7]]);
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4, 5, 6, 7].map((i) => `done ${i}`));
  });
});

describe('Semaphore', () => {
  it('lets at most capacity units in, in arrival order, a large request waiting its turn', async () => {
    const slots = new Semaphore(3);
    const order: string[] = [];
    await slots.acquire(2);
    const big = slots.acquire(3).then(() => order.push('big'));
    const small = slots.acquire(1).then(() => order.push('small'));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]); // one unit is free, but the big request came first
    slots.release(2);
    await big;
    expect(order).toEqual(['big']);
    slots.release(3);
    await small;
    expect(order).toEqual(['big', 'small']);
  });
});
