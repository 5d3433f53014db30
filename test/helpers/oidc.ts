import { runTs, terminate, type Proc } from './processes';
import { waitFor } from './wait';

/** The client the tests' provider knows (test/helpers/oidc-server.mjs). */
export const OIDC_CLIENT = { id: 'mail', secret: 'mail-secret-0123456789' };

export interface Person {
  sub: string;
  email: string;
  email_verified: boolean;
  name: string;
  groups: string[];
}

/**
 * The tests' OpenID provider: oidc-provider in its own process on a fixed loopback port (OIDC_ISSUER is read from the
 * environment when the app starts), with /control/* to choose who signs in next and to forge the next ID token.
 */
export class OidcProvider {
  private proc: Proc | undefined;

  constructor(readonly port: number, readonly redirectUri: string) {}

  /** it listens on 127.0.0.1 and names itself so */
  get issuer(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const proc = runTs('test/helpers/oidc-server.mjs', [], { OIDC_TEST_PORT: String(this.port), OIDC_TEST_REDIRECT_URI: this.redirectUri });
    this.proc = proc;
    await waitFor(
      () => {
        if (proc.child.exitCode !== null) throw new Error(`the OpenID provider exited: ${proc.stderr()}`);
        return proc.stdout().includes(`listening ${this.port}`);
      },
      { timeout: 60_000, what: 'the OpenID provider' },
    );
    return this;
  }

  stop(): Promise<void> {
    return terminate(this.proc?.child ?? null);
  }

  private async control(what: string, body: object): Promise<{ ok: boolean; tokens: number; alive?: boolean }> {
    const res = await fetch(`${this.issuer}/control/${what}`, { method: 'POST', body: JSON.stringify(body) });
    return (await res.json()) as { ok: boolean; tokens: number; alive?: boolean };
  }

  /** The person who signs in at the next authorization. */
  login(person: Partial<Person> & { sub: string }) {
    return this.control('login', person);
  }

  /** The next token answer's ID token, re-signed with the provider's key (`stranger`: another one), with these claims changed. */
  forge(claims: { iss?: string; aud?: string; nonce?: string; exp?: number; stranger?: boolean }) {
    return this.control('forge', claims);
  }

  /** How long the next authorization codes live (seconds). */
  codeTtl(seconds: number) {
    return this.control('code-ttl', { seconds });
  }

  /** Whether the provider would still take this authorization code (not expired, not used). */
  async codeAlive(code: string): Promise<boolean> {
    return (await this.control('code', { code })).alive === true;
  }

  /** How many ID tokens the token endpoint has answered. */
  async tokens(): Promise<number> {
    return (await this.control('status', {})).tokens;
  }

  /**
   * A browser at the provider: follows its redirects from the authorization URL, with its own cookies, through the
   * sign-in, to the redirect back to the console; answers that URL.
   */
  async authorize(url: string): Promise<URL> {
    const jar = new Map<string, string>();
    let next = new URL(url);
    for (let hop = 0; hop < 10; hop++) {
      if (!next.href.startsWith(this.issuer)) return next;
      const res = await fetch(next, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair!.indexOf('=');
        jar.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`the provider answered ${res.status} without a redirect: ${await res.text()}`);
      next = new URL(location, next);
    }
    throw new Error('the provider redirected too often');
  }
}
