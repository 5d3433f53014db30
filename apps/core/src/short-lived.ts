import v8 from 'node:v8';

/**
 * For a process that ends within seconds (an `npm run admin` command, a test file): Prisma's query compiler, 3.4 MB of
 * WebAssembly compiled when the process makes its first client, is kept at V8's baseline tier (Liftoff). By default V8
 * also recompiles it with its optimising tier on background threads, about 0.5 s of CPU that a short process never
 * earns back: an `account list` waited 0.45 s of its 1.8 s for that work before it could exit (1.4 s without). Called
 * before the process makes its first client; the services, which run for days, keep the optimised code.
 */
export function baselineWasmOnly(): void {
  v8.setFlagsFromString('--liftoff-only');
}
