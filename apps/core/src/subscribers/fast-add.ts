import { Batcher } from '../batch';
import type { Db } from '../db';
import { fastAddRows, type FastAdd, type FastAddOutcome } from './repository';

export type { FastAdd, FastAddOutcome } from './repository';

/**
 * The common add in ONE statement, shared by concurrent adds (group commit, as sends are): a person new to a list that
 * needs no confirmation (the list does not confirm, or the caller says `confirmed`) becomes active (the statement and
 * what it checks: repository.ts fastAddRows). Every other case (the person is on the list already, a confirmation
 * email is due, the same person twice in one batch) answers null and takes the state machine's transaction.
 * Measured in bench/README.md: Prisma's interactive transaction cost the add 2.9 ms of API CPU against about 0.3 here.
 * One per API process (the API's createApp), passed down.
 */
export class FastAdds {
  private readonly batcher: Batcher<FastAdd, FastAddOutcome>;

  constructor(db: Db) {
    // one batch in flight per process: batches of one process never wait on each other's list rows
    this.batcher = new Batcher((adds) => fastAddRows(db, adds), { maxInFlight: 1, maxBatch: 100 });
  }

  /** One add through the shared statement; resolves once its commit is done. */
  add(add: FastAdd): Promise<FastAddOutcome> {
    return this.batcher.submit(add);
  }
}
