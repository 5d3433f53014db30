import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { freePort, terminate } from './processes';
import { waitFor } from './wait';

/** GET over HTTPS trusting only `ca`: pebble's own endpoints. */
function fetchTrusting(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { ca, timeout: 2_000 }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

/**
 * Debian's pebble (Let's Encrypt's ACME test server) on free loopback ports (shared/recipes/README.md): a certificate
 * of its own for its HTTPS endpoint, its HTTP-01 checks sent to `httpPort` of the names it resolves through the test's
 * DNS server. `stop` and `start` again keep the ports (an ACME server that is down, then back).
 */
export class Pebble {
  port = 0;
  managementPort = 0;
  private proc: ChildProcess | null = null;
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-pebble-'));
  /** the certificate pebble's HTTPS endpoint shows (PEM): the service trusts it through ACME_CA_FILE */
  readonly caFile = path.join(this.dir, 'cert.pem');
  private readonly keyFile = path.join(this.dir, 'key.pem');

  constructor(private readonly options: { httpPort: number; dnsServer: string; validitySeconds?: number }) {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', this.keyFile, '-out', this.caFile], { stdio: 'ignore' });
  }

  get directoryUrl(): string {
    return `https://127.0.0.1:${this.port}/dir`;
  }

  /** Picks its ports (the directory URL is known from here on) without starting it: an ACME server that is down. */
  async reserve(): Promise<void> {
    this.port ||= await freePort();
    this.managementPort ||= await freePort();
  }

  async start(): Promise<void> {
    await this.reserve();
    const config = path.join(this.dir, 'pebble.json');
    const pebble: Record<string, unknown> = {
      listenAddress: `127.0.0.1:${this.port}`,
      managementListenAddress: `127.0.0.1:${this.managementPort}`,
      certificate: this.caFile,
      privateKey: this.keyFile,
      httpPort: this.options.httpPort,
      tlsPort: await freePort(),
      ocspResponderURL: '',
      externalAccountBindingRequired: false,
    };
    if (this.options.validitySeconds) pebble.certificateValidityPeriod = this.options.validitySeconds;
    fs.writeFileSync(config, JSON.stringify({ pebble }));
    const proc = spawn('/usr/bin/pebble', ['-config', config, '-dnsserver', this.options.dnsServer], {
      env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    this.proc = proc;
    const ca = fs.readFileSync(this.caFile, 'utf8');
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`pebble exited: ${output}`);
        return (await fetchTrusting(this.directoryUrl, ca).catch(() => null))?.status === 200;
      },
      { timeout: 15_000, what: 'pebble answering' },
    );
  }

  /** The root that signs the certificates pebble issues (it changes at every start). */
  async root(): Promise<string> {
    const ca = fs.readFileSync(this.caFile, 'utf8');
    const res = await fetchTrusting(`https://127.0.0.1:${this.managementPort}/roots/0`, ca);
    if (res.status !== 200) throw new Error(`pebble's root: ${res.status}`);
    return res.body;
  }

  async halt(): Promise<void> {
    await terminate(this.proc);
    this.proc = null;
  }

  async stop(): Promise<void> {
    await this.halt();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
