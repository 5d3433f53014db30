import { dbId, Joi } from './validate';

/**
 * Pages of rows for the admin console, by keyset (never OFFSET): a page costs the same on row 10 and row 10 million.
 * Each answer carries `next`, the cursor of the following page, or null on the last one.
 */
export interface Page<T> {
  rows: T[];
  next: string | null;
}

export const PAGE_SIZE = 50;

/** Keyset pages of an account's suppressions or stop list. */
export const entriesQuery = Joi.object({ account: dbId().required(), after: dbId(), limit: Joi.number().integer().min(1).max(1000).default(100) });
