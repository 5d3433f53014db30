/**
 * The token endpoint of an OAuth2 provider (RFC 6749 section 5): a refresh, or the exchange of an authorization code.
 * The client authenticates with its id and secret in the body (client_secret_post), as Google and Microsoft accept.
 */

/** The provider refused the grant for good (`invalid_grant`: consent revoked, password changed, token expired). */
export class OAuthGrantRefused extends Error {
  override name = 'OAuthGrantRefused';
}

/** Anything else: the provider away, a 5xx, an answer without a token. Worth trying again later. */
export class OAuthUnavailable extends Error {
  override name = 'OAuthUnavailable';
}

export interface TokenAnswer {
  accessToken: string;
  /** seconds the access token lives (3600 when the provider did not say) */
  expiresIn: number;
  /** a new refresh token when the provider rotates them (or the first one, after a code exchange) */
  refreshToken: string | null;
  idToken: string | null;
}

const TIMEOUT_MS = 15_000;

export async function tokenRequest(
  tokenUrl: string,
  client: { clientId: string; clientSecret: string },
  params: Record<string, string>,
): Promise<TokenAnswer> {
  const body = new URLSearchParams({ ...params, client_id: client.clientId, ...(client.clientSecret ? { client_secret: client.clientSecret } : {}) });
  let res: Response;
  try {
    res = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new OAuthUnavailable(`the token endpoint did not answer: ${(err as Error).message}`);
  }
  const text = await res.text().catch(() => '');
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* not JSON: judged by the status below */
  }
  if (!res.ok || typeof json.access_token !== 'string') {
    const error = typeof json.error === 'string' ? json.error : '';
    const description = typeof json.error_description === 'string' ? json.error_description : '';
    const words = [error, description].filter(Boolean).join(': ') || `HTTP ${res.status}`;
    if (error === 'invalid_grant') throw new OAuthGrantRefused(words);
    throw new OAuthUnavailable(`the token endpoint answered ${words}`);
  }
  const expires = Number(json.expires_in);
  return {
    accessToken: json.access_token,
    expiresIn: Number.isFinite(expires) && expires > 0 ? expires : 3600,
    refreshToken: typeof json.refresh_token === 'string' && json.refresh_token ? json.refresh_token : null,
    idToken: typeof json.id_token === 'string' ? json.id_token : null,
  };
}

/**
 * The account an id_token names (its `email`, else `preferred_username` or `upn` as Microsoft writes them), lower-cased.
 * The token came straight from the token endpoint over the connection we opened, so its claims are read without
 * checking the signature (OpenID Connect Core 3.1.3.7 allows it). Null when there is none.
 */
export function accountOfIdToken(idToken: string | null): string | null {
  if (!idToken) return null;
  const payload = idToken.split('.')[1];
  if (!payload) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const name = [claims.email, claims.preferred_username, claims.upn].find((c): c is string => typeof c === 'string' && c.includes('@'));
    return name ? name.toLowerCase() : null;
  } catch {
    return null;
  }
}
