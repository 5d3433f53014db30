/**
 * Group commit for a hot path. A call made while `maxInFlight` batches are already running waits, and all such calls go
 * together in the next batch: under load, many concurrent callers share one round trip (one statement, one commit,
 * one Redis pipeline), while a lone caller runs at once, with no timer to wait for.
 *
 * With `lingerMs`, a batch also waits that long for company before it starts (unless it is full already): for callers
 * who start one after another, where latency matters less than the round trips saved. With `gather`, a batch waits
 * only for the microtasks already queued: callers woken by one event (the sends of one committed statement, each
 * queueing its deliveries) go in one batch instead of the first alone and the rest behind it, with no timer. With
 * `overlapAt`, a batch starts beside others in flight only once that many calls wait: the batches stay large, and the
 * next one is already at the server when the one before it ends (its commit, its answer's way back), instead of
 * starting then.
 *
 * `run` answers its items in order. When a batch of several fails, each item runs again alone, so one bad item fails
 * only its own caller.
 */
export class Batcher<In, Out> {
  private waiting: { item: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];
  private running = 0;
  private lingering?: NodeJS.Timeout;
  private gathering = false;

  constructor(
    private readonly run: (items: In[]) => Promise<Out[]>,
    private readonly options: { maxInFlight: number; maxBatch: number; lingerMs?: number; gather?: boolean; overlapAt?: number },
  ) {}

  submit(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(lingered = false): void {
    while (this.running < this.options.maxInFlight && this.waiting.length) {
      if (this.running && this.options.overlapAt && this.waiting.length < this.options.overlapAt) return;
      if (this.options.lingerMs && !lingered && this.waiting.length < this.options.maxBatch) {
        this.lingering ??= setTimeout(() => {
          this.lingering = undefined;
          this.pump(true);
        }, this.options.lingerMs);
        return;
      }
      if (this.options.gather && !lingered && this.waiting.length < this.options.maxBatch) {
        if (!this.gathering) {
          this.gathering = true;
          queueMicrotask(() => {
            this.gathering = false;
            this.pump(true);
          });
        }
        return;
      }
      clearTimeout(this.lingering);
      this.lingering = undefined;
      lingered = false;
      const batch = this.waiting.splice(0, this.options.maxBatch);
      this.running++;
      void this.execute(batch);
    }
  }

  /**
   * Runs a batch, then starts the next one before answering this one's callers: the next statement is on its way
   * while they go on (their answers, their next steps), not only once they all have.
   */
  private async execute(batch: Batcher<In, Out>['waiting']): Promise<void> {
    let outs: Out[];
    try {
      outs = await this.run(batch.map((b) => b.item));
    } catch (err) {
      if (batch.length > 1) await Promise.all(batch.map((b) => this.run([b.item]).then(([out]) => b.resolve(out!), b.reject)));
      this.done();
      if (batch.length === 1) batch[0]!.reject(err);
      return;
    }
    this.done();
    // after the ticks already queued: the pool's (pg-pool hands out its connection on the next tick), so the next
    // batch's statement is written before this batch's callers take the thread to answer
    process.nextTick(() => batch.forEach((b, i) => b.resolve(outs[i]!)));
  }

  private done(): void {
    this.running--;
    this.pump();
  }
}

/**
 * At most `capacity` units in use at once; `acquire(n)` waits, in arrival order, until n are free. For bounding work
 * that batches would otherwise multiply (the rows a worker sends at once).
 */
export class Semaphore {
  private used = 0;
  private readonly waiting: { n: number; resolve: () => void }[] = [];

  constructor(readonly capacity: number) {}

  acquire(n = 1): Promise<void> {
    if (n > this.capacity) throw new RangeError(`cannot take ${n} of ${this.capacity} units at once`);
    if (!this.waiting.length && this.used + n <= this.capacity) {
      this.used += n;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ n, resolve }));
  }

  release(n = 1): void {
    this.used -= n;
    while (this.waiting.length && this.used + this.waiting[0]!.n <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.n;
      next.resolve();
    }
  }
}
