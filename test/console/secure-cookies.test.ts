import './https-env';
import request from 'supertest';
import { COOKIE, SIGNIN_COOKIE } from '../../apps/api/src/console/session';
import { ADMIN_TOKEN, useApi } from '../helpers/api';

const ctx = useApi();

const cookieLine = (res: request.Response, name: string) => ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${name}=`));

it('marks the sign-in and session cookies Secure when PUBLIC_URL is https, though the TLS proxy in front is not trusted', async () => {
  // plain http on the socket and no TRUST_PROXY: Express's req.secure is false, as behind a proxy nobody named
  const browser = request.agent(ctx.api.app);
  const page = await browser.get('/admin/signin').set('X-Forwarded-Proto', 'https');
  expect(cookieLine(page, SIGNIN_COOKIE)).toMatch(/;\s*Secure/i);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
  // supertest's agent keeps Secure cookies only for https: hand the nonce cookie on by hand
  const nonce = cookieLine(page, SIGNIN_COOKIE)!.split(';')[0]!;
  const signedIn = await request(ctx.api.app).post('/admin/signin').set('Cookie', nonce).type('form').send({ _csrf: csrf, token: ADMIN_TOKEN });
  expect(signedIn.status).toBe(303);
  const session = cookieLine(signedIn, COOKIE);
  expect(session).toMatch(/;\s*HttpOnly/i);
  expect(session).toMatch(/;\s*Secure/i);
  expect(session).toMatch(/;\s*SameSite=Strict/i);
});
