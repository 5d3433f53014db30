// A real OpenID provider for the SSO tests, run as its own process (the package is ESM only): oidc-provider, the
// certified implementation, with the code flow, PKCE and signed ID tokens as it ships them. What a test needs besides:
// the person who signs in next (/control/login: their email, whether it is verified, their groups), consent given at
// once, a chosen lifetime of authorization codes, and a man in the middle of the next token answer (/control/forge): it
// re-signs the ID token with the provider's own key, naming another issuer, audience, nonce or expiry (or signs it with
// a key the provider never published): the token an attacker would slip in, so that only the client's checks refuse it.
import http from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, decodeJwt } from 'jose';
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_TEST_PORT);
const issuer = `http://127.0.0.1:${port}`;
const redirectUri = process.env.OIDC_TEST_REDIRECT_URI;

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', use: 'sig', alg: 'RS256' };
// a key the provider never published, for a token signed by somebody else under the provider's key id
const { privateKey: strangerKey } = await generateKeyPair('RS256');

const state = {
  /** the person who signs in at the next authorization */
  login: { sub: 'ada', email: 'ada@example.test', email_verified: true, name: 'Ada', groups: [] },
  /** the next token answer's ID token is re-signed with these claims changed */
  forge: null,
  codeTtl: 60,
  tokens: 0,
};

const provider = new Provider(issuer, {
  clients: [
    { client_id: 'mail', client_secret: 'mail-secret-0123456789', redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] },
  ],
  jwks: { keys: [jwk] },
  // the person of /control/login, whoever the account id
  findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ ...state.login, sub: id }) }),
  claims: { openid: ['sub', 'groups'], email: ['email', 'email_verified'], profile: ['name'] },
  // scope claims in the ID token, as Google, Entra ID, Okta and Keycloak put them there
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  // consent given at once (a company's own app is trusted: no consent screen)
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
  ttl: { AuthorizationCode: () => state.codeTtl },
  pkce: { required: () => true },
});

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/token' || ctx.status !== 200 || !ctx.body?.id_token) return;
  state.tokens += 1;
  if (!state.forge) return;
  const { stranger, ...changed } = state.forge;
  const claims = { ...decodeJwt(ctx.body.id_token), ...changed };
  state.forge = null;
  ctx.body = { ...ctx.body, id_token: await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: jwk.kid, typ: 'JWT' }).sign(stranger ? strangerKey : privateKey) };
});

const callback = provider.callback();
const readJson = (req) =>
  new Promise((resolve) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => resolve(body ? JSON.parse(body) : {}));
  });

http
  .createServer(async (req, res) => {
    try {
      if (req.url.startsWith('/control/')) {
        const body = await readJson(req);
        if (req.url === '/control/login') state.login = { ...state.login, ...body };
        if (req.url === '/control/forge') state.forge = body;
        if (req.url === '/control/code-ttl') state.codeTtl = body.seconds;
        const alive = req.url === '/control/code' ? Boolean((await provider.AuthorizationCode.find(body.code, { ignoreExpiration: true }))?.isValid) : undefined;
        res.setHeader('content-type', 'application/json');
        return res.end(JSON.stringify({ ok: true, tokens: state.tokens, alive }));
      }
      if (/^\/interaction\/[^/]+$/.test(req.url)) {
        // the person signs in at once: the login of /control/login
        const details = await provider.interactionDetails(req, res);
        const result = details.prompt.name === 'login' ? { login: { accountId: state.login.sub } } : {};
        return await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      }
      return callback(req, res);
    } catch (err) {
      res.statusCode = 500;
      res.end(String(err?.stack ?? err));
    }
  })
  .listen(port, '127.0.0.1', () => console.log(`listening ${port}`));
