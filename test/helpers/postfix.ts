import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './processes';
import { waitFor } from './wait';
import net from 'node:net';

/**
 * A private Debian Postfix on a loopback port (shared/recipes/README.md): `postfix -c <dir>/etc start`, never the
 * system's. `dead.test` takes any local part and bounces it with a real DSN (no such user); each domain of `routes`
 * is delivered to the `smtp:[127.0.0.1]:<port>` given; nothing else leaves the machine.
 */
export class Postfix {
  port = 0;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ms-postfix-'));
  private get etc() {
    return path.join(this.dir, 'etc');
  }

  async start(routes: Record<string, number>): Promise<void> {
    this.port = await freePort();
    const data = path.join(this.dir, 'data');
    for (const d of [this.etc, data, path.join(this.dir, 'log')]) fs.mkdirSync(d, { recursive: true });
    fs.chmodSync(this.dir, 0o755);
    execFileSync('chown', ['-R', 'postfix', data]);
    fs.writeFileSync(path.join(this.etc, 'transport'), Object.entries(routes).map(([domain, port]) => `${domain} smtp:[127.0.0.1]:${port}`).join('\n') + '\n');
    const main = {
      compatibility_level: '3.6',
      queue_directory: data,
      data_directory: path.join(data, 'lib'),
      mail_owner: 'postfix',
      myhostname: 'relay.test',
      mydomain: 'relay.test',
      myorigin: 'relay.test',
      inet_interfaces: '127.0.0.1',
      inet_protocols: 'ipv4',
      mydestination: 'dead.test',
      local_recipient_maps: '',
      alias_maps: '',
      alias_database: '',
      recipient_delimiter: '',
      mynetworks: '127.0.0.0/8',
      smtpd_relay_restrictions: 'permit_mynetworks, reject',
      default_transport: 'error:no mail leaves this machine',
      relay_transport: 'error:no mail leaves this machine',
      transport_maps: `texthash:${path.join(this.etc, 'transport')}`,
      smtp_dns_support_level: 'disabled',
      smtp_tls_security_level: 'none',
      smtpd_tls_security_level: 'none',
      maillog_file: path.join(this.dir, 'log', 'maillog'),
      maillog_file_prefixes: this.dir,
      bounce_size_limit: '1',
      queue_run_delay: '1s',
      minimal_backoff_time: '1s',
      maximal_backoff_time: '2s',
      biff: 'no',
    };
    fs.writeFileSync(path.join(this.etc, 'main.cf'), Object.entries(main).map(([k, v]) => `${k} = ${v}`).join('\n') + '\n');
    const services = [
      `127.0.0.1:${this.port} inet n - n - - smtpd`,
      'pickup fifo n - n 60 1 pickup',
      'cleanup unix n - n - 0 cleanup',
      'qmgr unix n - n 300 1 qmgr',
      'rewrite unix - - n - - trivial-rewrite',
      'bounce unix - - n - 0 bounce',
      'defer unix - - n - 0 bounce',
      'trace unix - - n - 0 bounce',
      'verify unix - - n - 1 verify',
      'flush unix n - n 1000? 0 flush',
      'proxymap unix - - n - - proxymap',
      'smtp unix - - n - - smtp',
      'relay unix - - n - - smtp',
      'showq unix n - n - - showq',
      'error unix - - n - - error',
      'retry unix - - n - - error',
      'discard unix - - n - - discard',
      'local unix - n n - - local',
      'anvil unix - - n - 1 anvil',
      'scache unix - - n - 1 scache',
      'postlog unix-dgram n - n - 1 postlogd',
    ];
    fs.writeFileSync(path.join(this.etc, 'master.cf'), services.join('\n') + '\n');
    try {
      execFileSync('postfix', ['-c', this.etc, 'start'], { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`postfix did not start: ${String((err as { stderr?: Buffer }).stderr ?? err)} ${this.log()}`);
    }
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect(this.port, '127.0.0.1', () => {
            socket.destroy();
            resolve(true);
          });
          socket.on('error', () => resolve(false));
        }),
      { timeout: 15_000, what: 'postfix listening' },
    );
  }

  log(): string {
    try {
      return fs.readFileSync(path.join(this.dir, 'log', 'maillog'), 'utf8');
    } catch {
      return '';
    }
  }

  async stop(): Promise<void> {
    try {
      execFileSync('postfix', ['-c', this.etc, 'stop'], { stdio: 'pipe' });
    } catch {
      // not running
    }
    if (!process.env.KEEP_POSTFIX) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
