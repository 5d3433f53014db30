/**
 * Imported first by a script run from source that loads the Prisma client (scripts/admin.ts): the client is generated
 * again when schema.prisma changed, before any import below it loads the client. In the script's own process, the
 * check is a hash of the schema; a `tsx scripts/generate.ts` of its own before each command took 0.9 s.
 */
import { generateIfStale } from './generate';

generateIfStale();
