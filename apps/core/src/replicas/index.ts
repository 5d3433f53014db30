import { config } from '../config';
import { closeClient, createDb, type Db } from '../db';
import { replayLagSeconds } from './repository';

/**
 * Read replicas (docs/deploy.md, "A read replica"): with DATABASE_READ_URL the console's message search and charts,
 * the exports (a list's subscribers as CSV, the audit log as NDJSON) and the broadcast audience's dry run read a
 * streaming replica, and say how far behind it is; everything else stays on the primary.
 * Made by the API's createApp and handed to the console (no module state).
 */
export interface Reads {
  /** the replica's client, or the primary's when there is none */
  db: Db;
  replica: boolean;
  /** seconds the replica is behind (0 when caught up; null when unknown); 0 without a replica */
  lagSeconds(): Promise<number | null>;
  close(): Promise<void>;
}

export function createReads(primary: Db, url = config().databaseReadUrl): Reads {
  if (!url) return { db: primary, replica: false, lagSeconds: async () => 0, close: async () => undefined };
  // a few connections: the operator's pages, not the send path
  const db = createDb(url, 4, false);
  return { db, replica: true, lagSeconds: () => replayLagSeconds(db), close: () => closeClient(db) };
}

/** How a page says where its figures come from: null from the primary, else the replica and its lag. */
export async function readNote(reads: Reads): Promise<string | null> {
  if (!reads.replica) return null;
  const lag = await reads.lagSeconds().catch(() => null);
  return lag === null ? 'Read from a replica; how far behind it is, is not known.' : `Read from a replica, ${lag < 1 ? 'less than a second' : `${Math.round(lag)} s`} behind the primary.`;
}

/**
 * The header of an answer read from a replica (an export, a dry run): `Replica-Lag`, the seconds it is behind the
 * primary (one decimal), or `unknown`. None from the primary.
 */
export async function lagHeader(reads: Reads): Promise<Record<string, string>> {
  if (!reads.replica) return {};
  const lag = await reads.lagSeconds().catch(() => null);
  return { 'Replica-Lag': lag === null ? 'unknown' : String(Math.round(lag * 10) / 10) };
}
