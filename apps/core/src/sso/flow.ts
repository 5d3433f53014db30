import crypto from 'node:crypto';
import { custom, errors, generators, Issuer, type BaseClient } from 'openid-client';
import type { OidcConfig } from '../config';
import { BadRequest, Forbidden, ServiceUnavailable, Unauthorized } from '../errors';
import { redis, rkey } from '../redis';
import type { SsoIdentity } from './users';

/** How long a sign-in may stay at the provider: its state, nonce and PKCE verifier are kept this long, once. */
export const FLOW_TTL_SECONDS = 600;

/** What the provider sends back to the redirect URI (its query). */
export interface ProviderAnswer {
  state?: string;
  code?: string;
  iss?: string;
  error?: string;
  error_description?: string;
  session_state?: string;
}

export interface Sso {
  readonly settings: OidcConfig;
  /**
   * A new sign-in: the provider's authorization URL (code flow with PKCE S256, a state and a nonce) and the secret of
   * the browser it is bound to (kept in the browser's cookie only; Redis keeps its SHA-256).
   */
  start(redirectUri: string): Promise<{ url: string; browser: string }>;
  /** The provider's answer checked (docs/teams.md) and the identity of its ID token with every claim. */
  finish(answer: ProviderAnswer, browser: string | undefined, redirectUri: string): Promise<{ identity: SsoIdentity; claims: Record<string, unknown> }>;
}

interface Flow {
  nonce: string;
  verifier: string;
  browser: string;
}

const digest = (value: string) => crypto.createHash('sha256').update(value).digest('hex');
const flowKey = (state: string) => rkey('sso', 'flow', digest(state));

/**
 * SSO with OpenID Connect through openid-client (a certified relying party): the provider's metadata and keys are
 * discovered from OIDC_ISSUER on the first sign-in (and again after a failure); the ID token's signature, issuer,
 * audience, expiry and nonce are the library's checks.
 */
export function createSso(settings: OidcConfig): Sso {
  let discovered: Promise<BaseClient> | undefined;
  const client = () => {
    discovered ??= discover(settings).catch((err: unknown) => {
      discovered = undefined;
      throw err;
    });
    return discovered;
  };

  return {
    settings,
    async start(redirectUri) {
      const oidc = await client();
      const state = generators.state();
      const flow: Flow = { nonce: generators.nonce(), verifier: generators.codeVerifier(), browser: generators.random() };
      await redis().set(flowKey(state), JSON.stringify({ ...flow, browser: digest(flow.browser) }), 'EX', FLOW_TTL_SECONDS);
      const url = oidc.authorizationUrl({
        redirect_uri: redirectUri,
        scope: settings.scopes,
        state,
        nonce: flow.nonce,
        code_challenge: generators.codeChallenge(flow.verifier),
        code_challenge_method: 'S256',
      });
      return { url, browser: flow.browser };
    },

    async finish(answer, browser, redirectUri) {
      if (answer.error) throw new Unauthorized(`the identity provider refused the sign-in: ${answer.error_description || answer.error}`);
      if (!answer.state || !answer.code) throw new BadRequest('the identity provider\'s answer has no state or code: start the sign-in again');
      // the state is used once: a second answer with it (a replayed code) finds nothing
      const raw = await redis().getdel(flowKey(answer.state));
      if (!raw) throw new BadRequest('this sign-in is unknown, expired or finished already: start it again');
      const flow = JSON.parse(raw) as Flow;
      if (!browser || digest(browser) !== flow.browser) throw new Forbidden('this sign-in was started in another browser: start it again in this one');
      const oidc = await client();
      const tokens = await oidc
        .callback(redirectUri, { ...answer }, { state: answer.state, nonce: flow.nonce, code_verifier: flow.verifier, response_type: 'code' })
        .catch((err: unknown) => {
          if (err instanceof errors.OPError) throw new Unauthorized(`the identity provider refused the sign-in: ${err.error_description || err.error}`);
          if (err instanceof errors.RPError) throw new Unauthorized(`the identity provider's ID token was refused: ${err.message}`);
          throw err;
        });
      const claims = tokens.claims() as Record<string, unknown>;
      if (typeof claims.email !== 'string' || !claims.email.includes('@')) throw new Unauthorized('the ID token has no email: let the provider send the email claim (scope email)');
      const name = typeof claims.name === 'string' ? claims.name : '';
      return { identity: { issuer: claims.iss as string, subject: claims.sub as string, email: claims.email, emailVerified: claims.email_verified === true, name }, claims };
    },
  };
}

async function discover(settings: OidcConfig): Promise<BaseClient> {
  const issuer = await Issuer.discover(settings.issuer).catch((err: unknown) => {
    throw new ServiceUnavailable(`the identity provider at ${settings.issuer} cannot be reached (${(err as Error).message}): try again later`);
  });
  // the ID tokens' issuer is the metadata's: it must be the one configured, or any issuer could be named there
  if (issuer.metadata.issuer !== settings.issuer) throw new ServiceUnavailable(`OIDC_ISSUER is ${settings.issuer} but the provider names itself ${issuer.metadata.issuer}: set OIDC_ISSUER to that`);
  const client = new issuer.Client({ client_id: settings.clientId, client_secret: settings.clientSecret, response_types: ['code'] });
  client[custom.clock_tolerance] = 5;
  return client;
}
