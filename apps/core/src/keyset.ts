/**
 * Pages of rows for the admin console, by keyset (never OFFSET): a page costs the same on row 10 and row 10 million.
 * Each answer carries `next`, the cursor of the following page, or null on the last one.
 */
export interface Page<T> {
  rows: T[];
  next: string | null;
}

export const PAGE_SIZE = 50;
