/**
 * The V8 flag the API process runs with: `npm start` (scripts/start.ts), the bench, the Dockerfile's CMD and the
 * compose file's api command (test/foundation/compose.test.ts keeps them equal).
 *
 * A young generation of 8 MB semi-spaces instead of Node 20's 16: the API's short-lived request objects are collected
 * before the heap grows to hold them. Its peak in the bench's main phases fell from 238-240 MB to 225-231, under 50
 * kept-alive connections of refusals from 222 to 204, with no throughput lost (bench/README.md). The worker keeps the
 * default: with the flag a 100,000-subscriber broadcast peaked at 251 MB against 217 without, its longer-lived
 * objects promoted sooner into a heap that then grew.
 */
export const API_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
