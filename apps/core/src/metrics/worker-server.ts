import http from 'node:http';
import { logger } from '../logger';
import { contentType, scrape } from '.';

/**
 * A worker's metrics (deliveries, SMTP latency, webhook and inbound counters, process figures) on WORKER_METRICS_PORT:
 * GET /metrics, nothing else. Bind it to a private interface: it carries no secret but takes no token either.
 */
export function serveWorkerMetrics(port: number, host = '0.0.0.0'): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    scrape().then(
      (text) => res.writeHead(200, { 'Content-Type': contentType }).end(text),
      (err: Error) => {
        logger.error({ err: err.message }, 'metrics scrape failed');
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('scrape failed\n');
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
