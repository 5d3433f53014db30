/**
 * nodemailer's own pool straight to the sink: the baseline of the delivery and broadcast phases, with `mail` building
 * the same kind of email the phase sends.
 */
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { BENCH_DKIM, resetSink, sinkSigned } from './service';
import { PORTS, STAMP, WARMUP_MESSAGES } from './settings';

export type RawMail = Parameters<ReturnType<typeof nodemailer.createTransport>['sendMail']>[0];
export const plainMail = (i: number): RawMail => ({ to: 'reader@example.com', subject: 'Benchmark', text: `Hello ${i}` });

/**
 * nodemailer's pool sending `messages` emails straight to the sink from this process: the seconds it took, and this
 * process's CPU an email meanwhile (it does nothing else then: that is nodemailer's own cost, the sink's left out).
 */
export async function rawPool(messages: number, mail: (i: number) => RawMail = plainMail, options: { dkim?: 'pem' | 'key' } = {}): Promise<{ seconds: number; cpuMsPerEmail: number }> {
  // 'key': the key parsed once, as a careful user gives it (a KeyObject); 'pem': as text, which nodemailer parses for
  // every email (about half its CPU an email): the strongest baseline is the first, the second is kept for reference.
  // nodemailer hands dkim.privateKey as it is to crypto's Sign.sign (dist/cjs/dkim/sign.js; its type is crypto.KeyLike),
  // so a KeyObject signs: each email reaching the sink carries a DKIM-Signature that verifies with the key
  const privateKey = options.dkim === 'key' ? crypto.createPrivateKey(BENCH_DKIM.private_key) : BENCH_DKIM.private_key;
  const dkim = options.dkim ? { domainName: BENCH_DKIM.domain, keySelector: BENCH_DKIM.selector, privateKey } : undefined;
  const pool = nodemailer.createTransport({ pool: true, maxConnections: 5, host: '127.0.0.1', port: PORTS.sinkSmtp, secure: false, ignoreTLS: true, dkim });
  const sendAll = async (n: number, tag: string) => {
    // in waves, so the bench process itself does not hold 100,000 pending emails at once
    for (let from = 0; from < n; from += 5000) {
      await Promise.all(
        Array.from({ length: Math.min(5000, n - from) }, (_, j) =>
          pool.sendMail({ from: 'bench@example.com', ...mail(from + j), messageId: `<${tag}${from + j}.${STAMP}@example.com>` }),
        ),
      );
    }
  };
  await sendAll(WARMUP_MESSAGES, 'w');
  await resetSink();
  const b0 = performance.now();
  const cpu0 = process.cpuUsage();
  await sendAll(messages, 'b');
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - b0) / 1000;
  pool.close();
  // nodemailer sends an email unsigned when its signature fails (dkim/sign.js answers false): a cheaper baseline
  if (dkim && (await sinkSigned()) < messages) throw new Error(`bench: nodemailer's pool (key as ${options.dkim}) sent emails without a DKIM signature`);
  return { seconds, cpuMsPerEmail: (cpu.user + cpu.system) / 1000 / messages };
}
