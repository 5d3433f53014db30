import pino from 'pino';
import { logLevel } from './config';

/** Structured logs; anything that could carry a secret is redacted by path. */
export const logger = pino({
  // only the level, not the whole config: a config error must reach preflight's one-line report
  level: logLevel(),
  redact: {
    paths: [
      'req.headers.authorization',
      'headers.authorization',
      'authorization',
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
  },
});

export type Logger = typeof logger;
