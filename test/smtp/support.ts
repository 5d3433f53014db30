import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import nodemailer from 'nodemailer';
import { KeyAuthenticator } from '../../apps/core/src/auth/authenticator';
import { AuthFailures } from '../../apps/core/src/auth/failures';
import { db } from '../../apps/core/src/db';
import { createSending } from '../../apps/core/src/sending/accept';
import { Submission, type SubmissionParts, type SubmissionSettings } from '../../apps/core/src/submission/server';
import { submissionTls } from '../../apps/core/src/submission/tls';

/** A self-signed pair made once per test file (as a development start makes it), in a temporary directory. */
function testTls() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'smtp-tls-'));
  return submissionTls({ tlsCert: null, tlsKey: null, name: 'localhost' }, dir);
}

/**
 * The SMTP submission server on loopback ports for the file's tests, wired as apps/smtp's main wires it: its own
 * sending parts, key authenticator and failure rule. `settings` change the bounds (short deadlines, small caps).
 */
export function useSubmission(settings: Partial<SubmissionSettings> & { failuresPerMinute?: number } = {}) {
  const holder: { submission?: Submission; parts?: SubmissionParts; port?: number; portTls?: number } = {};
  beforeAll(async () => {
    const auth = new KeyAuthenticator(db());
    await auth.start();
    const failures = new AuthFailures(settings.failuresPerMinute ?? 20);
    await failures.start();
    holder.parts = { db: db(), sending: createSending(db()), auth, failures };
    holder.submission = new Submission(holder.parts, {
      port: 0,
      portTls: 0,
      host: '127.0.0.1',
      name: 'localhost',
      allowInsecureAuth: false,
      maxConnectionsPerAddress: 300,
      maxConnections: 1000,
      authTimeoutSeconds: 30,
      idleTimeoutSeconds: 60,
      dataTimeoutSeconds: 60,
      tls: testTls(),
      ...settings,
    });
    const bound = await holder.submission.listen();
    holder.port = bound.port!;
    holder.portTls = bound.portTls!;
  });
  afterAll(async () => {
    await holder.submission?.close();
    await holder.parts?.auth.stop();
    await holder.parts?.failures.stop();
    await holder.parts?.sending.finished.stop();
  });
  return {
    get port() {
      return holder.port!;
    },
    get portTls() {
      return holder.portTls!;
    },
    get parts() {
      return holder.parts!;
    },
    get submission() {
      return holder.submission!;
    },
  };
}

/** Runs a real client program (swaks, python3) to its end: exit code and output. */
export function runClient(command: string, args: string[], input?: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => resolve({ code, out }));
    child.stdin.end(input ?? '');
  });
}

/** A nodemailer client of the service's submission port (STARTTLS, the self-signed development certificate accepted). */
export function submissionClient(port: number, token: string, options: { secure?: boolean; authMethod?: 'PLAIN' | 'LOGIN' } = {}) {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: options.secure ?? false,
    requireTLS: !options.secure,
    authMethod: options.authMethod,
    auth: { user: 'app', pass: token },
    tls: { rejectUnauthorized: false },
  });
}
