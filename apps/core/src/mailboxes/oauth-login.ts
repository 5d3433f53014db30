/** How an OAuth2 mailbox gets its access token at each new connection (oauth/tokens.ts's tokenProvider). */
export type OAuthLogin = (renew: boolean) => Promise<{ token: string; expires: number }>;
