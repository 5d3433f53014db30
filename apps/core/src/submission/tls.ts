import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { SmtpConfig } from '../config';
import { logger } from '../logger';

/**
 * The certificate and key of SMTP submission: SMTP_TLS_CERT and SMTP_TLS_KEY (PEM files) when set. Otherwise (not
 * allowed in production: config.ts) a self-signed pair made once with `openssl req` into `stateDir/smtp-tls/` and
 * reused from there, said so in the log: clients must be told to accept it (docs/smtp.md).
 */
export function submissionTls(smtp: Pick<SmtpConfig, 'tlsCert' | 'tlsKey' | 'name'>, stateDir: string): { key: Buffer; cert: Buffer; selfSigned: boolean } {
  if (smtp.tlsCert && smtp.tlsKey) return { key: fs.readFileSync(smtp.tlsKey), cert: fs.readFileSync(smtp.tlsCert), selfSigned: false };
  const dir = path.join(stateDir, 'smtp-tls');
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  if (!fs.existsSync(keyFile) || !fs.existsSync(certFile)) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const name = smtp.name.replace(/[^A-Za-z0-9.-]/g, '') || 'localhost';
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '825', '-subj', `/CN=${name}`,
        '-addext', `subjectAltName=DNS:${name},DNS:localhost,IP:127.0.0.1`, '-keyout', keyFile, '-out', certFile],
      { stdio: 'ignore' },
    );
    fs.chmodSync(keyFile, 0o600);
    logger.warn({ cert: certFile }, 'SMTP submission: made a self-signed TLS certificate for development (set SMTP_TLS_CERT and SMTP_TLS_KEY for a real one)');
  } else {
    logger.warn({ cert: certFile }, 'SMTP submission: using the self-signed development certificate (set SMTP_TLS_CERT and SMTP_TLS_KEY for a real one)');
  }
  return { key: fs.readFileSync(keyFile), cert: fs.readFileSync(certFile), selfSigned: true };
}
