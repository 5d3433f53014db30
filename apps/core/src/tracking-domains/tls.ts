import tls from 'node:tls';
import { config } from '../config';
import { decryptSecret } from '../crypto';
import type { Tx } from '../db';
import { logger } from '../logger';
import { servedCertificate } from './repository';

interface Entry {
  context: tls.SecureContext | null;
  notAfter: number;
  readAt: number;
}

/**
 * The certificates the HTTPS listener serves by SNI, read from Postgres (so a renewal any worker made is served by
 * every API process) and kept `refreshMs` per name. A name without a live certificate gets no handshake.
 */
export class SniCertificates {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: Tx,
    private readonly refreshMs = 60_000,
  ) {}

  /** tls.Server's SNICallback. */
  readonly callback = (servername: string, done: (err: Error | null, ctx?: tls.SecureContext) => void): void => {
    this.context(servername.toLowerCase().replace(/\.$/, '')).then(
      (ctx) => (ctx ? done(null, ctx) : done(new Error(`no certificate for ${servername}`))),
      (err: Error) => {
        logger.warn({ servername, err: err.message }, 'the certificate for a TLS handshake could not be read');
        done(err);
      },
    );
  };

  async context(name: string): Promise<tls.SecureContext | null> {
    const now = Date.now();
    const kept = this.entries.get(name);
    if (kept && now - kept.readAt < this.refreshMs && kept.notAfter > now) return kept.context;
    const row = await servedCertificate(this.db, name);
    const context = row ? tls.createSecureContext({ cert: row.certificatePem, key: decryptSecret(row.privateKeyEnc, config().secretKey) }) : null;
    // unknown names are remembered too (a scan of made-up names reads Postgres once a name and period), within a bound
    if (this.entries.size > 10_000) this.entries.clear();
    this.entries.set(name, { context, notAfter: row ? row.notAfter.getTime() : Infinity, readAt: now });
    return context;
  }
}
