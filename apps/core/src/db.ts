import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../../generated/prisma/client';
import { config } from './config';

export type Db = PrismaClient;
/** A client or the client of an interactive transaction: domain functions accept either. */
export type Tx = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;

export function createDb(url = config().databaseUrl, max = 10): Db {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max }) });
}

let shared: Db | undefined;

/** The process's database client, made on first use. */
export function db(): Db {
  shared ??= createDb();
  return shared;
}

export async function closeDb(): Promise<void> {
  if (shared) {
    const client = shared;
    shared = undefined;
    await client.$disconnect();
  }
}

export { Prisma } from '../../../generated/prisma/client';
