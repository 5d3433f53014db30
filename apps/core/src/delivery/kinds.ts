import type { Message } from '../../../../generated/prisma/client';
import { MessageKind } from '../../../../generated/prisma/enums';
import type { Db, Tx } from '../db';
import type { PreSendGuard, PreSendGuards } from './guards';
import type { WatchedWindow } from './repository';

/**
 * What delivery needs from one kind of email, declared by the folder that writes it (listmonk's `DataSource`, seen from
 * the sending loop): delivery imports no domain, it calls what the kinds registered. Every part is optional.
 */
export interface EmailKind {
  /** the Message kinds this registration speaks for */
  readonly kinds: readonly MessageKind[];
  /**
   * The row's own links put into a stored body or header on the way to the wire (an unsubscribe link, a confirmation
   * link): stored rows hold a marker there, never a usable token. At most one a kind.
   */
  readonly links?: (stored: string, message: Message) => string;
  /** The pre-send guard of the kind (guards.ts), run inside the transaction that claims a row. At most one a kind. */
  readonly guard?: PreSendGuard;
  /** Rows of the kind reached a final status (committed): told after the commit, never awaited, never failing the row. */
  readonly finished?: (ids: string[]) => void;
  /** Inside the transaction that ends a row of the kind without delivery (a bounce, a failure for good). */
  readonly undelivered?: (tx: Tx, messageId: string) => Promise<unknown>;
  /**
   * After a "sent" mark whose statement found watched windows (pause_watches: delivery/repository.ts's MARK_SENT), the
   * mark committed: each window judged again (outreach/auto-pause.ts).
   */
  readonly windowsEnded?: (db: Db, watched: WatchedWindow[]) => Promise<void>;
}

/**
 * A process's kinds of email, made once at start from the one list of registrations its main hands in
 * (core/src/email-kinds.ts) and passed down to delivery, never filled as a side effect. A list that leaves a kind of
 * the schema without a registration, or gives a kind two link-fillers or two guards, is refused: the process does not
 * start.
 */
export class EmailKinds {
  readonly guards: PreSendGuards;
  private readonly linksOf: Partial<Record<MessageKind, NonNullable<EmailKind['links']>>> = {};
  private readonly registrations: readonly EmailKind[];

  constructor(registrations: readonly EmailKind[]) {
    this.registrations = registrations;
    const guards: Partial<Record<MessageKind, PreSendGuard>> = {};
    const seen = new Set<MessageKind>();
    for (const r of registrations) {
      for (const kind of r.kinds) {
        seen.add(kind);
        if (r.links) {
          if (this.linksOf[kind]) throw new Error(`email kinds: ${kind} has two registrations with links`);
          this.linksOf[kind] = r.links;
        }
        if (r.guard) {
          if (guards[kind]) throw new Error(`email kinds: ${kind} has two pre-send guards`);
          guards[kind] = r.guard;
        }
      }
    }
    const missing = Object.values(MessageKind).filter((k) => !seen.has(k));
    if (missing.length) throw new Error(`email kinds: no registration for ${missing.join(', ')} (core/src/email-kinds.ts)`);
    this.guards = Object.freeze(guards);
  }

  /** A stored body or header with the row's own links in; as stored when its kind has none. */
  links<T extends string | null>(stored: T, message: Message): T {
    const fill = this.linksOf[message.kind];
    return (stored === null || !fill ? stored : fill(stored, message)) as T;
  }

  /** Rows that reached a final status, told to the registrations of their kinds (after the commit). */
  finished(rows: readonly { id: string; kind: MessageKind }[]): void {
    if (!rows.length) return;
    for (const r of this.registrations) {
      if (!r.finished) continue;
      const ids = rows.filter((row) => r.kinds.includes(row.kind)).map((row) => row.id);
      if (ids.length) r.finished(ids);
    }
  }

  /** Inside the transaction that ends the row without delivery: its kind's registrations, one after another. */
  async undelivered(tx: Tx, message: { id: string; kind: MessageKind }): Promise<void> {
    for (const r of this.registrations) if (r.undelivered && r.kinds.includes(message.kind)) await r.undelivered(tx, message.id);
  }

  /** After a "sent" mark that found watched windows. */
  async windowsEnded(db: Db, watched: WatchedWindow[]): Promise<void> {
    if (!watched.length) return;
    for (const r of this.registrations) if (r.windowsEnded) await r.windowsEnded(db, watched);
  }
}
