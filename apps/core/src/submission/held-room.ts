/** A message's share of the room: the bytes of its DATA it holds, from its first piece to its answer. */
export interface Share {
  held: number;
}

interface Waiter {
  share: Share;
  n: number;
  grant: () => void;
}

/**
 * The bytes of DATA one SMTP process holds at once (submission/server.ts): each piece of a message takes its room
 * before the next is read, and until then the rest waits in the client's socket.
 *
 * Messages that each hold part of the room and wait for more would wait on one another. So room goes first to the
 * message furthest along (the most held; the first of equals), which ends soonest and frees the most, and a message
 * begun last waits longest; and the one holding the most of all (the leader) never waits: its piece is taken past
 * the capacity if need be. While the leader reads, it gets each piece at once; while it is answered, the others wait
 * for what it frees. So one message at a time goes past the capacity, by at most its size.
 */
export class HeldRoom {
  private used = 0;
  private readonly shares = new Set<Share>();
  private readonly waiting: Waiter[] = [];

  constructor(readonly capacity: number) {}

  /** A message starts its DATA: its share, empty, to pass to take and give back with release. */
  open(): Share {
    const share = { held: 0 };
    this.shares.add(share);
    return share;
  }

  /** Room for n more bytes of this message: true once taken; false when `ms` passed first (nothing taken). */
  take(share: Share, n: number, ms: number): Promise<boolean> {
    if (this.leads(share) || (!this.waiting.length && this.used + n <= this.capacity)) {
      this.grant(share, n);
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        share,
        n,
        grant: () => {
          clearTimeout(timer);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        // those behind it may be served now
        this.serve();
        resolve(false);
      }, ms);
      timer.unref();
      this.waiting.push(waiter);
      this.serve();
    });
  }

  /** The message was answered (or failed): all it held is free. */
  release(share: Share): void {
    this.shares.delete(share);
    this.used -= share.held;
    share.held = 0;
    this.serve();
  }

  /** Bytes held now, past the capacity while a leader reads on. */
  get held(): number {
    return this.used;
  }

  private grant(share: Share, n: number): void {
    this.used += n;
    share.held += n;
  }

  /** Whether this message holds the most (the first of equals), and something. */
  private leads(share: Share): boolean {
    if (share.held === 0) return false;
    for (const other of this.shares) {
      if (other === share) return true;
      if (other.held >= share.held) return false;
    }
    return true;
  }

  /** Serves the waiting, furthest along first, while the first fits or leads. */
  private serve(): void {
    // a stable sort: among equals, the one that asked first
    this.waiting.sort((a, b) => b.share.held - a.share.held);
    while (this.waiting.length) {
      const next = this.waiting[0]!;
      if (!this.leads(next.share) && this.used + next.n > this.capacity) return;
      this.waiting.shift();
      this.grant(next.share, next.n);
      next.grant();
    }
  }
}
