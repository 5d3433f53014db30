import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { terminate } from './processes';
import { waitFor } from './wait';

/**
 * Debian's rspamd on loopback with a configuration directory of its own (docs/mx.md, "Spam"): the packaged rules,
 * a normal worker on `port` (its /checkv2 is what RSPAMD_URL names), the controller on `port + 1` (only for /ping),
 * no proxy, no fuzzy worker, no Redis. DNS goes to the test's resolver, the TLD list is a short one (compiling the
 * full list takes minutes on a loaded machine), and the GTUBE test patterns are on (not for production).
 */
export class Rspamd {
  private child: ChildProcess | null = null;
  private log = '';
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rspamd-'));

  constructor(readonly port: number, public dnsPort: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const write = (file: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(this.dir, file)), { recursive: true });
      fs.writeFileSync(path.join(this.dir, file), text);
    };
    write('override.d/worker-normal.inc', `bind_socket = "127.0.0.1:${this.port}";\ncount = 1;\n`);
    write('override.d/worker-controller.inc', `bind_socket = "127.0.0.1:${this.port + 1}";\ncount = 1;\nsecure_ip = "127.0.0.1";\n`);
    write('override.d/worker-proxy.inc', 'count = 0;\n');
    write('override.d/worker-fuzzy.inc', 'count = 0;\n');
    write('override.d/logging.inc', 'type = "console";\nlevel = "error";\n');
    write('tld.dat', 'test\ncom\norg\nnet\nexample\n');
    write(
      'local.d/options.inc',
      `dns { nameserver = ["127.0.0.1:${this.dnsPort}"]; timeout = 0.5s; retransmits = 1; }\nurl_tld = "${path.join(this.dir, 'tld.dat')}";\nenable_test_patterns = true;\ngtube_patterns = "all";\n`,
    );
    for (const sub of ['db', 'run', 'log']) fs.mkdirSync(path.join(this.dir, sub), { recursive: true });
    // rspamd will not run as root: as its own Debian user then, which must own the directory
    const asRoot = process.getuid?.() === 0;
    if (asRoot) for (const p of walk(this.dir)) fs.chownSync(p, uidOf('_rspamd'), gidOf('_rspamd'));
    const vars = ['LOCAL_CONFDIR', this.dir, 'DBDIR', path.join(this.dir, 'db'), 'RUNDIR', path.join(this.dir, 'run'), 'LOGDIR', path.join(this.dir, 'log')];
    const args = ['-f', '-c', '/etc/rspamd/rspamd.conf', ...(asRoot ? ['-u', '_rspamd', '-g', '_rspamd'] : [])];
    for (let i = 0; i < vars.length; i += 2) args.push(`--var=${vars[i]}=${vars[i + 1]}`);
    this.child = spawn('rspamd', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.log += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.log += d.toString()));
    const ping = () =>
      fetch(`http://127.0.0.1:${this.port + 1}/ping`, { signal: AbortSignal.timeout(2000) })
        .then((r) => r.ok)
        .catch(() => false);
    await waitFor(
      async () => {
        if (this.child?.exitCode !== null) throw new Error(`rspamd exited: ${this.log}`);
        return ping();
      },
      { timeout: 120_000, interval: 500, what: 'rspamd to answer' },
    );
  }

  async stop(): Promise<void> {
    await terminate(this.child);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function walk(dir: string): string[] {
  return [dir, ...fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]))];
}

const passwd = () => fs.readFileSync('/etc/passwd', 'utf8').split('\n').map((l) => l.split(':'));
const uidOf = (user: string) => Number(passwd().find((f) => f[0] === user)?.[2] ?? 0);
const gidOf = (user: string) => Number(passwd().find((f) => f[0] === user)?.[3] ?? 0);
