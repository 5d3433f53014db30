import { KeptAnswers } from '../../apps/core/src/kept';

/** Answers kept by key for a time (apps/core/src/kept.ts): shared, expired, bounded, and dropped when not worth keeping. */
describe('KeptAnswers', () => {
  afterEach(() => jest.useRealTimers());

  it('shares one answer among the callers of a key until it expires, and asks again after', async () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const kept = new KeptAnswers<number>({ ms: 60_000 });
    let asked = 0;
    const ask = () => Promise.resolve(++asked);
    expect(await Promise.all([kept.get('a', ask), kept.get('a', ask)])).toEqual([1, 1]);
    expect(await kept.get('b', ask)).toBe(2);
    jest.setSystemTime(1_000_000 + 59_999);
    expect(await kept.get('a', ask)).toBe(1);
    jest.setSystemTime(1_000_000 + 60_000);
    expect(await kept.get('a', ask)).toBe(3);
  });

  it('drops an answer `keep` refuses and a failure `keepFailure` does not accept; keeps a failure it accepts', async () => {
    const kept = new KeptAnswers<string>({ ms: 60_000, keep: (a) => a !== 'temporary', keepFailure: (err) => (err as Error).message === 'definite' });
    const answers = ['temporary', 'good'];
    const ask = () => Promise.resolve(answers.shift()!);
    expect(await kept.get('a', ask)).toBe('temporary');
    expect(await kept.get('a', ask)).toBe('good');
    expect(await kept.get('a', ask)).toBe('good');

    let failures = 0;
    const fail = (message: string) => () => {
      failures++;
      return Promise.reject(new Error(message));
    };
    await expect(kept.get('b', fail('timed out'))).rejects.toThrow('timed out');
    await expect(kept.get('b', fail('timed out'))).rejects.toThrow('timed out');
    expect(failures).toBe(2);
    await expect(kept.get('c', fail('definite'))).rejects.toThrow('definite');
    await expect(kept.get('c', fail('definite'))).rejects.toThrow('definite');
    expect(failures).toBe(3);
  });

  it('drops every key once it holds `entries` of them', async () => {
    const kept = new KeptAnswers<number>({ ms: 60_000, entries: 2 });
    let asked = 0;
    const ask = () => Promise.resolve(++asked);
    await kept.get('a', ask);
    await kept.get('b', ask);
    await kept.get('c', ask); // the third clears a and b
    expect(await kept.get('c', ask)).toBe(3);
    expect(await kept.get('a', ask)).toBe(4);
  });
});
