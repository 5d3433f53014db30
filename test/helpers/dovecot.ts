import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { freePort } from './processes';
import { waitFor } from './wait';

/** Debian puts it in /usr/sbin, which a non-login PATH may lack. */
const DOVECOT = ['/usr/sbin/dovecot', '/usr/local/sbin/dovecot'].find((p) => fs.existsSync(p)) ?? 'dovecot';

/**
 * A real IMAP server for tests: Debian's dovecot (`apt-get install -y dovecot-imapd`) on a free loopback port, with a
 * passwd-file of users and maildirs in a temp folder. Messages go in with IMAP APPEND.
 */
export class Dovecot {
  port = 0;
  private dir = '';
  private users: string[] = [];

  async start(users: Record<string, string>): Promise<void> {
    this.users = Object.entries(users).map(([user, pass]) => `${user}:{PLAIN}${pass}`);
    ({ dir: this.dir, port: this.port } = await launchDovecot('dovecot-', (dir) => ({
      mechanisms: 'plain login',
      passdb: `driver = passwd-file\n  args = scheme=PLAIN username_format=%u ${dir}/users`,
      files: { users: `${this.users.join('\n')}\n` },
    })));
    await waitFor(() => this.login(Object.keys(users)[0]!, Object.values(users)[0]!).then(() => true).catch(() => false), { timeout: 20_000, interval: 200, what: 'dovecot' });
  }

  private async login(user: string, pass: string): Promise<void> {
    const client = this.client(user, pass);
    await client.connect();
    await client.logout();
  }

  client(user: string, pass: string): ImapFlow {
    return new ImapFlow({ host: '127.0.0.1', port: this.port, secure: false, auth: { user, pass }, logger: false });
  }

  url(user: string, pass: string): string {
    return `imap://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${this.port}`;
  }

  /** Puts a raw message in the user's INBOX (IMAP APPEND). */
  async append(user: string, pass: string, raw: string): Promise<void> {
    const client = this.client(user, pass);
    await client.connect();
    try {
      await client.append('INBOX', raw);
    } finally {
      await client.logout();
    }
  }

  async stop(): Promise<void> {
    await stopDovecot(this.dir);
  }
}

/** How a dovecot of launchDovecot logs users in: its auth_mechanisms, its passdb block's body, files its passdb reads. */
export interface DovecotAuth {
  mechanisms: string;
  passdb: string;
  /** written into its folder, by name, before it starts */
  files: Record<string, string>;
}

/**
 * Starts Debian's dovecot on a free loopback port with a temp folder of its own (maildirs, run, state, log) and the
 * logins of `auth(folder)`; answers the folder (stopDovecot's) and the port. Dovecot and OAuthDovecot (oauth.ts) wait
 * for it in their own way.
 */
export async function launchDovecot(prefix: string, auth: (dir: string) => DovecotAuth): Promise<{ dir: string; port: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  for (const sub of ['mail', 'run', 'state', 'log']) fs.mkdirSync(path.join(dir, sub), { mode: 0o755 });
  const { mechanisms, passdb, files } = auth(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  execFileSync('chown', ['-R', 'dovecot:dovecot', path.join(dir, 'mail')]);
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'dovecot.conf'), config(dir, port, mechanisms, passdb));
  execFileSync(DOVECOT, ['-c', path.join(dir, 'dovecot.conf')], { stdio: 'ignore' });
  return { dir, port };
}

/** Stops the dovecot of launchDovecot's folder `dir` (SIGTERM, then waits for it to go) and removes the folder. */
export async function stopDovecot(dir: string): Promise<void> {
  const pidFile = path.join(dir, 'run', 'master.pid');
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    try {
      process.kill(pid, 'SIGTERM');
      await waitFor(() => { try { process.kill(pid, 0); return false; } catch { return true; } }, { timeout: 10_000, what: 'dovecot to stop' });
    } catch {
      /* already gone */
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

function config(dir: string, port: number, mechanisms: string, passdb: string): string {
  return `protocols = imap
listen = 127.0.0.1
base_dir = ${dir}/run
state_dir = ${dir}/state
log_path = ${dir}/log/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = ${mechanisms}
default_login_user = dovenull
default_internal_user = dovecot
default_internal_group = dovecot
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
  chroot =
  user = dovenull
}
service anvil {
  chroot =
}
passdb {
  ${passdb}
}
userdb {
  driver = static
  args = uid=dovecot gid=dovecot home=${dir}/mail/%u
}
mail_location = maildir:~/Maildir
first_valid_uid = 100
`;
}
