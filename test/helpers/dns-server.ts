import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promises as dns } from 'node:dns';
import { freePort, terminate } from './processes';
import { waitFor } from './wait';

/**
 * One record for the test's DNS server: TXT (its strings as given: a long value may be split), MX, A, CNAME (its target
 * must be a name this server answers for, such as an A record's) or CAA (RFC 8659: flags, tag, value).
 */
export type ZoneRecord =
  | { type: 'TXT'; host: string; strings: string[] }
  | { type: 'MX'; host: string; target: string; priority?: number }
  | { type: 'A'; host: string; address: string }
  | { type: 'CNAME'; host: string; target: string }
  | { type: 'CAA'; host: string; tag: string; value: string; flags?: number };

/** A CAA record's RDATA in hex, for dnsmasq's `dns-rr` (type 257). */
const caaHex = (r: { tag: string; value: string; flags?: number }) =>
  Buffer.concat([Buffer.from([r.flags ?? 0, r.tag.length]), Buffer.from(r.tag), Buffer.from(r.value)]).toString('hex');

/** A TXT record; a value over 255 characters is split into strings of 255, as DNS hosts do. */
export const txt = (host: string, value: string): ZoneRecord => ({ type: 'TXT', host, strings: value.match(/.{1,255}/g) ?? [''] });

const line = (r: ZoneRecord) =>
  r.type === 'TXT'
    ? `txt-record=${r.host},${r.strings.map((s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`).join(',')}`
    : r.type === 'MX'
      ? `mx-host=${r.host},${r.target},${r.priority ?? 10}`
      : r.type === 'CNAME'
        ? `cname=${r.host},${r.target}`
        : r.type === 'CAA'
          ? `dns-rr=${r.host},257,${caaHex(r)}`
          : `host-record=${r.host},${r.address}`;

/**
 * Debian's dnsmasq on a free loopback port, answering only for the zones given (anything else in them is NXDOMAIN).
 * `publish` rewrites its records: dnsmasq reads txt-record and mx-host lines only at start (SIGHUP rereads hosts files,
 * not them), so it is restarted on the same port.
 */
export class DnsServer {
  port = 0;
  private proc: ChildProcess | null = null;
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-dns-'));
  private records: ZoneRecord[] = [];

  constructor(private readonly zones: string[]) {}

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(records: ZoneRecord[] = []): Promise<void> {
    // the port is free when picked, not when dnsmasq binds it: a test file beside this one may take it in between
    // (its dnsmasq then answers for zones of the same names, with its own keys), so a lost port is picked again
    for (let attempt = 1; ; attempt++) {
      this.port ||= await freePort();
      try {
        return await this.publish(records);
      } catch (err) {
        if (attempt >= 3) throw err;
        this.port = 0;
      }
    }
  }

  /** The zones' records become exactly these. */
  async publish(records: ZoneRecord[]): Promise<void> {
    this.records = records;
    await this.halt();
    const conf = path.join(this.dir, 'dnsmasq.conf');
    // this server's own token: an answer without it comes from another server on the port
    const token = crypto.randomUUID();
    const lines = [...this.zones.map((z) => `local=/${z}/`), `txt-record=ready.${this.zones[0]},"${token}"`, ...records.map(line)];
    fs.writeFileSync(conf, lines.join('\n') + '\n');
    const proc = spawn('/usr/sbin/dnsmasq', ['--no-daemon', `--port=${this.port}`, '--listen-address=127.0.0.1', '--bind-interfaces', '--no-resolv', '--no-hosts', '--pid-file=', '--cache-size=0', `--conf-file=${conf}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    this.proc = proc;
    const resolver = new dns.Resolver({ timeout: 200, tries: 1 });
    resolver.setServers([this.address]);
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`dnsmasq exited: ${stderr}`);
        return (await resolver.resolveTxt(`ready.${this.zones[0]}`).catch(() => null))?.flat().includes(token);
      },
      { timeout: 10_000, what: 'dnsmasq answering' },
    );
  }

  /** The records now published, for a test that changes one of them. */
  current(): ZoneRecord[] {
    return [...this.records];
  }

  private async halt(): Promise<void> {
    await terminate(this.proc);
    this.proc = null;
  }

  async stop(): Promise<void> {
    await this.halt();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A DNS server that never gives an answer: `servfail` answers every question with SERVFAIL (rcode 2), `silent` reads
 * the questions and answers nothing (the client times out). A real UDP server on loopback, not a mocked resolver.
 */
export class BrokenDnsServer {
  mode: 'servfail' | 'silent' = 'servfail';
  private readonly socket = dgram.createSocket('udp4');

  async start(): Promise<void> {
    this.socket.on('message', (query, peer) => {
      if (this.mode === 'silent' || query.length < 12) return;
      const answer = Buffer.from(query);
      answer[2] = 0x80 | (query[2]! & 0x79); // QR, the query's opcode and RD
      answer[3] = 0x80 | 2; // RA, rcode SERVFAIL
      answer.writeUInt16BE(0, 6);
      answer.writeUInt16BE(0, 8);
      answer.writeUInt16BE(0, 10);
      this.socket.send(answer, peer.port, peer.address);
    });
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
  }

  get address(): string {
    return `127.0.0.1:${this.socket.address().port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}

/** The file's dnsmasq, started before anything reads the configuration, with DNS_SERVERS pointing at it. */
export function useDns(zones: string[], records: ZoneRecord[] = []): DnsServer {
  const server = new DnsServer(zones);
  beforeAll(async () => {
    await server.start(records);
    process.env.DNS_SERVERS ??= server.address;
  });
  afterAll(() => server.stop());
  return server;
}
