import request from 'supertest';
import type { ApiApp } from '../../apps/api/src/app';

/** The console's origin in tests (PUBLIC_URL): a session's admin API calls carry it as `Origin`. */
export const ORIGIN = 'http://mail.test';

/** A browser-like client of the console: keeps its cookies, reads each form's CSRF token. */
export function consoleClient(api: ApiApp) {
  const agent = request.agent(api.app);
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  return {
    agent,
    csrfOf,
    /** the form at `path`'s CSRF token (a GET of the page) */
    async csrf(path: string): Promise<string> {
      return csrfOf((await agent.get(path)).text);
    },
    async post(path: string, form: Record<string, string>, csrfFrom = path) {
      const _csrf = await this.csrf(csrfFrom);
      return agent.post(path).type('form').send({ _csrf, ...form });
    },
    async signIn(email: string, password: string) {
      return this.post('/admin/signin', { email, password });
    },
  };
}

/** The token of an invitation or reset link (`.../admin/invite/<token>`). */
export const linkToken = (url: string) => /\/admin\/(?:invite|reset)\/([A-Za-z0-9_-]+)/.exec(url)![1]!;

/** The session cookie an answer sets (`ms_console=<value>`), with its attributes. */
export function sessionCookie(res: { headers: Record<string, unknown> }): { value: string; attributes: string } {
  const cookies = (res.headers['set-cookie'] as string[] | undefined) ?? [];
  const line = cookies.find((c) => c.startsWith('ms_console='));
  if (!line) throw new Error(`no session cookie in ${JSON.stringify(cookies)}`);
  const [pair, ...attributes] = line.split(';');
  return { value: pair!.slice('ms_console='.length), attributes: attributes.join(';') };
}
