import type { EmailKind } from '../delivery/kinds';
import { announceFinished } from './finished';

/** A send's copies (POST /api/v1/send, SMTP submission): their end wakes the requests that wait for it (`Prefer: wait`). */
export const sendCopies: EmailKind = { kinds: ['transactional'], finished: announceFinished };
