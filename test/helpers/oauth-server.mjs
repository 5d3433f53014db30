// A real OAuth2 authorization server for tests, run as its own process (the package is ESM only): oauth2-mock-server
// issues signed JWT access tokens (authorization code with PKCE, refresh_token grant), and its hooks give it what a
// provider such as Google does: refresh tokens it remembers, rotates and refuses once consent is revoked (invalid_grant),
// a chosen token lifetime, and the account that consents. Its /introspect (RFC 7662, form POST as dovecot sends it)
// checks the JWT's signature against the server's own keys, its expiry, and revocation. /control/* drives it from tests.
import crypto from 'node:crypto';
import http from 'node:http';
import { OAuth2Issuer, OAuth2Service } from 'oauth2-mock-server';

const CLIENT_ID = process.env.OAUTH_TEST_CLIENT_ID || 'test-client';
const CLIENT_SECRET = process.env.OAUTH_TEST_CLIENT_SECRET || 'test-secret';

const issuer = new OAuth2Issuer();
await issuer.keys.generate('RS256');
const service = new OAuth2Service(issuer);

const state = {
  /** the account the next consent is given by */
  login: 'owner@example.test',
  /** the next /authorize answers access_denied (the user clicked "Cancel") */
  deny: false,
  /** the token endpoint is down: every token request answers 503 (a provider's outage) */
  down: false,
  ttl: 3600,
  rotate: true,
  /** refresh token -> account */
  grants: new Map(),
  /** authorization code -> account */
  codes: new Map(),
  /** account -> when its consent was revoked (epoch seconds): tokens issued before are dead */
  revoked: new Map(),
  refreshes: 0,
  refused: 0,
  /** token requests answered 503 while down */
  unavailable: 0,
  exchanges: 0,
  introspections: 0,
};

const accountOf = (req) => {
  const body = req.body ?? {};
  if (body.grant_type === 'refresh_token') return state.grants.get(body.refresh_token);
  if (body.grant_type === 'authorization_code') return state.codes.get(body.code);
  return undefined;
};

service.on('beforeAuthorizeRedirect', (redirect) => {
  if (state.deny) {
    state.deny = false;
    redirect.url.searchParams.delete('code');
    redirect.url.searchParams.set('error', 'access_denied');
    redirect.url.searchParams.set('error_description', 'The user denied access');
    return;
  }
  const code = redirect.url.searchParams.get('code');
  if (code) state.codes.set(code, state.login);
});

service.on('beforeTokenSigning', (token, req) => {
  const account = accountOf(req);
  const now = Math.floor(Date.now() / 1000);
  token.payload.exp = now + state.ttl;
  token.payload.jti = crypto.randomUUID();
  if (account) Object.assign(token.payload, { sub: account, email: account });
});

service.on('beforeResponse', (response, req) => {
  const body = req.body ?? {};
  if (state.down) {
    state.unavailable++;
    response.statusCode = 503;
    response.body = { error: 'temporarily_unavailable', error_description: 'the token service is down' };
    return;
  }
  const clientId = body.client_id;
  if (clientId !== CLIENT_ID || body.client_secret !== CLIENT_SECRET) {
    response.statusCode = 401;
    response.body = { error: 'invalid_client', error_description: 'unknown client or wrong secret' };
    return;
  }
  const account = accountOf(req);
  if (!account || (body.grant_type === 'refresh_token' && state.revoked.has(account))) {
    if (body.grant_type === 'refresh_token') state.refused++;
    response.statusCode = 400;
    response.body = { error: 'invalid_grant', error_description: body.grant_type === 'refresh_token' ? 'Token has been expired or revoked.' : 'Malformed auth code.' };
    return;
  }
  response.body.expires_in = state.ttl;
  if (body.grant_type === 'authorization_code') {
    state.exchanges++;
    state.codes.delete(body.code);
    // a new consent: what was revoked before is given again
    state.revoked.delete(account);
    state.grants.set(response.body.refresh_token, account);
  } else if (body.grant_type === 'refresh_token') {
    state.refreshes++;
    if (state.rotate) {
      state.grants.delete(body.refresh_token);
      state.grants.set(response.body.refresh_token, account);
    } else {
      delete response.body.refresh_token;
    }
  }
});

/** RFC 7662: active only for a JWT this server signed, not expired, of an account whose consent stands. */
function introspect(token) {
  state.introspections++;
  const [head, payload, signature] = String(token ?? '').split('.');
  if (!head || !payload || !signature) return { active: false };
  let header;
  let claims;
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString());
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  } catch {
    return { active: false };
  }
  const jwk = issuer.keys.toJSON().find((k) => k.kid === header.kid);
  if (!jwk || header.alg !== 'RS256') return { active: false };
  const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
  const ok = crypto.verify('RSA-SHA256', Buffer.from(`${head}.${payload}`), key, Buffer.from(signature, 'base64url'));
  const now = Math.floor(Date.now() / 1000);
  if (!ok || typeof claims.exp !== 'number' || claims.exp <= now) return { active: false };
  const revokedAt = state.revoked.get(claims.email);
  if (revokedAt !== undefined && claims.iat <= revokedAt) return { active: false };
  return { active: true, username: claims.email, scope: claims.scope, exp: claims.exp, client_id: CLIENT_ID, token_type: 'Bearer' };
}

const readBody = (req) =>
  new Promise((resolve) => {
    let data = '';
    req.on('data', (d) => (data += d));
    req.on('end', () => resolve(data));
  });

const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (req.method === 'POST' && url.pathname === '/introspect') {
    const raw = await readBody(req);
    const type = req.headers['content-type'] || '';
    const token = type.includes('json') ? JSON.parse(raw || '{}').token : new URLSearchParams(raw).get('token');
    return json(res, 200, introspect(token));
  }
  if (url.pathname.startsWith('/control/')) {
    const body = req.method === 'POST' ? JSON.parse((await readBody(req)) || '{}') : {};
    switch (url.pathname) {
      case '/control/set':
        if (body.login !== undefined) state.login = body.login;
        if (body.ttl !== undefined) state.ttl = body.ttl;
        if (body.rotate !== undefined) state.rotate = body.rotate;
        if (body.deny !== undefined) state.deny = body.deny;
        if (body.down !== undefined) state.down = body.down;
        return json(res, 200, { ok: true });
      case '/control/revoke':
        // consent withdrawn: its refresh tokens and the access tokens issued so far are dead
        state.revoked.set(body.account, Math.floor(Date.now() / 1000));
        for (const [token, account] of state.grants) if (account === body.account) state.grants.delete(token);
        return json(res, 200, { ok: true });
      case '/control/restore':
        state.revoked.delete(body.account);
        return json(res, 200, { ok: true });
      case '/control/stats':
        return json(res, 200, {
          refreshes: state.refreshes,
          refused: state.refused,
          unavailable: state.unavailable,
          exchanges: state.exchanges,
          introspections: state.introspections,
          grants: [...state.grants.keys()],
        });
      case '/control/token': {
        // an access token for an account, as the server would issue it (tests that log in by hand)
        const token = await issuer.buildToken({
          expiresIn: state.ttl,
          scopesOrTransform: (_h, p) => Object.assign(p, { sub: body.account, email: body.account, jti: crypto.randomUUID() }),
        });
        return json(res, 200, { token });
      }
      default:
        return json(res, 404, { error: 'unknown control' });
    }
  }
  return service.requestHandler(req, res);
});

server.listen(Number(process.env.OAUTH_TEST_PORT || 0), '127.0.0.1', () => {
  const { port } = server.address();
  issuer.url = `http://127.0.0.1:${port}`;
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
