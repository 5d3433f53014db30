/**
 * Answers kept by key for a time (the MX's DNS answers, its domains' routes, the results of plain mail). The first
 * caller of a key starts the work; later callers within `ms` share its promise. Past `entries` keys every one is
 * dropped at once (a bound on memory, not an LRU). An answer `keep` refuses, or a failure `keepFailure` does not
 * accept, is dropped as soon as it settles, so the next caller asks again.
 */
export class KeptAnswers<T> {
  private readonly kept = new Map<string, { until: number; answer: Promise<T> }>();

  constructor(
    private readonly options: { ms: number; entries?: number; keep?: (answer: T) => boolean; keepFailure?: (err: unknown) => boolean },
  ) {}

  get(key: string, ask: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = this.kept.get(key);
    if (hit && hit.until > now) return hit.answer;
    if (this.kept.size >= (this.options.entries ?? 10_000)) this.kept.clear();
    const answer = ask();
    this.kept.set(key, { until: now + this.options.ms, answer });
    const drop = () => {
      if (this.kept.get(key)?.answer === answer) this.kept.delete(key);
    };
    answer.then(
      (value) => {
        if (this.options.keep && !this.options.keep(value)) drop();
      },
      (err: unknown) => {
        if (!this.options.keepFailure?.(err)) drop();
      },
    );
    return answer;
  }
}
