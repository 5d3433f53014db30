import https from 'node:https';
import type { RequestListener } from 'node:http';
import type { Db } from '../../core/src/db';
import { SniCertificates } from '../../core/src/tracking-domains/tls';
import { configureServer } from './edge';

/**
 * The HTTPS listener of docs/tracking-domains.md (HTTPS_PORT): the same app as the HTTP port, each tracking domain
 * served with its own certificate by SNI; a name without a live certificate gets no handshake.
 */
export function createTrackingServer(app: RequestListener, db: Db, options: { refreshMs?: number } = {}): https.Server {
  const certificates = new SniCertificates(db, options.refreshMs);
  const server = https.createServer({ SNICallback: certificates.callback }, app);
  configureServer(server);
  return server;
}
