import v8 from 'node:v8';

/**
 * V8 settings for the API and worker processes; call first, before any query. Both measured with `npm run bench`
 * (bench/README.md):
 * - Prisma compiles its WebAssembly query compiler on the first query, and V8's optimising Wasm tier doubled that
 *   module's footprint, about 50 MB per process, with no gain on the endpoints that use Prisma most: so baseline code
 *   only, each function compiled when first called.
 * - Under load, the state of requests in flight is promoted to the old generation, which V8 by default lets grow to
 *   about four times what is live before collecting it (+130 MB on the accept load). Twice what is live costs the same
 *   throughput and keeps the API near 190 MB.
 */
export function tuneRuntime(): void {
  v8.setFlagsFromString('--liftoff-only');
  v8.setFlagsFromString('--wasm-lazy-compilation');
  v8.setFlagsFromString('--heap-growing-percent=100');
}
