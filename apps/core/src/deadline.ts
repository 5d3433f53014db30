/**
 * `work`'s answer, or an Error "`what` within N s" once `ms` passed without it. Its own failure after that has no one
 * to tell and is dropped. The timer is cleared either way.
 */
export function within<T>(work: PromiseLike<T>, ms: number, what: string): Promise<T> {
  const answer = Promise.resolve(work);
  answer.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([answer, timeout]).finally(() => clearTimeout(timer));
}
