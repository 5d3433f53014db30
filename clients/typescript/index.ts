import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './api';

export type { paths };

/**
 * A typed client of the public API (`/api/v1`), from the types generated out of its OpenAPI document
 * (`npm run client`). Every path, body and answer is checked by TypeScript:
 *
 *   const api = mailserviceClient('https://mail.example.com', process.env.MAILSERVICE_KEY!);
 *   const { data, error } = await api.POST('/send', { body: { to: 'someone@example.com', subject: 'Hi', text: 'Hello' } });
 */
export function mailserviceClient(baseUrl: string, apiKey: string, options: { fetch?: typeof fetch } = {}): Client<paths> {
  return createClient<paths>({
    baseUrl: `${baseUrl.replace(/\/+$/, '')}/api/v1`,
    headers: { Authorization: `Bearer ${apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}
