import pino from 'pino';
import { logLevel } from './config';

/** What every log line has redacted, by path: credentials, cookies (sent and set), passwords, tokens. */
export const REDACT = {
  paths: [
    'authorization',
    'headers.authorization',
    '*.headers.authorization',
    'cookie',
    '*.cookie',
    'headers.cookie',
    '*.headers.cookie',
    'headers["set-cookie"]',
    '*.headers["set-cookie"]',
    'password',
    'pass',
    'smtp',
    'token',
    '*.password',
    '*.pass',
    '*.smtp',
    '*.token',
    '*.smtpPasswordEnc',
  ],
  censor: '[redacted]',
};

/** Structured logs; anything that could carry a secret is redacted by path. */
export const logger = pino({
  // only the level, not the whole config: a config error must reach preflight's one-line report
  level: logLevel(),
  redact: REDACT,
});

export type Logger = typeof logger;
