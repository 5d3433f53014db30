import crypto from 'node:crypto';
import net from 'node:net';
import type { VerifyProbeConfig } from '../config';
import { redis, rkey } from '../redis';

/** What the MX said to RCPT TO: accepted (250/251), rejected (5xx), or unknown (4xx such as greylisting, no answer). */
export interface ProbeAnswer {
  mailbox: 'accepted' | 'rejected' | 'unknown';
  /** the server accepted a random address of the domain too: it takes anything, so `accepted` proves nothing */
  catchAll?: boolean;
  /** the server's words, for the reason */
  reply: string;
}

/** How long one conversation may take, and how long a probe waits for the MX's turn. */
const CONVERSATION_MS = 15_000;
const TURN_WAIT_MS = 20_000;

/**
 * The mailbox probe (docs/verification.md): EHLO, MAIL FROM and RCPT TO without DATA, from VERIFY_PROBE_HOST only,
 * at most one connection per MX at a time (a Redis lock, across processes) and VERIFY_PROBE_PER_MINUTE connections a
 * minute (a Redis counter, across processes). A probe past the minute's allowance is not made: the caller answers
 * without the mailbox check rather than wait.
 */
export class MailboxProbe {
  constructor(private readonly settings: VerifyProbeConfig) {}

  /** null: not probed (the minute's allowance is spent, or the MX stayed busy). */
  async probe(mx: { name: string; ip: string }, address: string, domain: string): Promise<ProbeAnswer | null> {
    const minute = rkey('verify', 'probes', Math.floor(Date.now() / 60_000));
    // the allowance spent: answered at once, without waiting for the MX's turn (an import's thousands pass quickly)
    if (Number(await redis().get(minute)) >= this.settings.perMinute) return null;
    const lock = rkey('verify', 'probe-lock', mx.name);
    const holder = crypto.randomUUID();
    const deadline = Date.now() + TURN_WAIT_MS;
    while ((await redis().set(lock, holder, 'PX', CONVERSATION_MS + 5_000, 'NX')) !== 'OK') {
      if (Date.now() > deadline) return null;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    try {
      const [[, count]] = (await redis().multi().incr(minute).expire(minute, 120).exec()) as [[null, number], unknown];
      if (count > this.settings.perMinute) return null;
      return await this.converse(mx.ip, address, `${crypto.randomBytes(9).toString('hex')}@${domain}`);
    } finally {
      // released only by its holder (a lock that expired and was taken by another stays theirs)
      await redis().eval(`if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`, 1, lock, holder);
    }
  }

  /** One SMTP conversation: the address, then a random one of its domain when the first is accepted. */
  private converse(mxHost: string, address: string, random: string): Promise<ProbeAnswer> {
    const { from, host, port } = this.settings;
    const helo = from.slice(from.lastIndexOf('@') + 1);
    return new Promise((resolve) => {
      const socket = net.connect({ host: mxHost, port, localAddress: host });
      socket.setEncoding('utf8');
      let buffer = '';
      let step = 0;
      let answer: ProbeAnswer | null = null;
      const finish = (result: ProbeAnswer) => {
        clearTimeout(timer);
        if (!socket.destroyed) socket.end('QUIT\r\n');
        socket.destroySoon();
        resolve(result);
      };
      const timer = setTimeout(() => finish(answer ?? { mailbox: 'unknown', reply: 'the mail server did not answer in time' }), CONVERSATION_MS);
      socket.on('error', (err) => finish(answer ?? { mailbox: 'unknown', reply: `could not talk to the mail server: ${err.message}` }));
      socket.on('close', () => finish(answer ?? { mailbox: 'unknown', reply: 'the mail server closed the connection' }));
      const commands = [`EHLO ${helo}`, `MAIL FROM:<${from}>`, `RCPT TO:<${address}>`, `RCPT TO:<${random}>`];
      socket.on('data', (chunk: string) => {
        buffer += chunk;
        // a reply is complete at its last line: the code followed by a space
        const lines = buffer.split('\r\n');
        const last = lines.findIndex((l) => /^\d{3}( |$)/.test(l));
        if (last < 0) return;
        const reply = lines.slice(0, last + 1).join(' ').slice(0, 300);
        buffer = lines.slice(last + 1).join('\r\n');
        const code = Number(reply.slice(0, 3));
        if (step < 3) {
          // greeting, EHLO and MAIL FROM must be accepted before the question means anything
          if (code >= 400) return finish({ mailbox: 'unknown', reply });
        } else if (step === 3) {
          if (code >= 500) return finish({ mailbox: 'rejected', reply });
          if (code >= 400) return finish({ mailbox: 'unknown', reply });
          answer = { mailbox: 'accepted', reply };
        } else {
          return finish({ ...answer!, catchAll: code < 300 });
        }
        socket.write(`${commands[step]}\r\n`);
        step++;
      });
    });
  }
}
