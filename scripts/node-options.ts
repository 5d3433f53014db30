/**
 * The V8 flag the API process runs with: `npm start` (scripts/start.ts), the bench, the Dockerfile's CMD and the
 * compose file's api command (test/foundation/compose.test.ts keeps them equal).
 *
 * A young generation of 8 MB semi-spaces instead of Node 20's 16: the API's short-lived request objects are collected
 * before the heap grows to hold them. Its peak in the bench's main phases fell from 238-240 MB to 225-231, under 50
 * kept-alive connections of refusals from 222 to 204, with no throughput lost (bench/README.md).
 */
export const API_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];

/**
 * The worker's: semi-spaces of 4 MB. Of its peak during a broadcast (about 250 MB) the live objects were 65 MB and V8's
 * pages 140 MB, a young generation of two 16 MB semi-spaces among them; with 4 MB ones a 100,000-subscriber broadcast
 * peaked at 228 MB against 254-257 (a 30,000 one at 209 against 247), at the same pace; the worker's CPU an email in
 * the delivery phase stayed within the host's noise (1.17-1.24 ms against 1.02-1.28). `npm start`, the compose file
 * and the bench.
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];

/**
 * The SMTP submission process's: semi-spaces of 4 MB. With 200 idle connections and fifty clients sending 1 MB
 * messages (bench/smtp.ts), its peak was 250-257 MB with 8 MB ones and 207-223 MB with these, its pace and CPU an
 * accept within the host's noise. `npm start`, the compose file and the bench.
 */
export const SMTP_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
