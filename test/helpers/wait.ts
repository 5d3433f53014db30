/** Polls `check` until it returns a truthy value or the deadline passes; no fixed sleeps in tests. */
export async function waitFor<T>(check: () => T | Promise<T>, { timeout = 10_000, interval = 25, what = 'condition' } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}
