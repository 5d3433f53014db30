import pino from 'pino';
import { config } from './config';

/** Structured logs; anything that could carry a secret is redacted by path. */
export const logger = pino({
  level: config().logLevel,
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
