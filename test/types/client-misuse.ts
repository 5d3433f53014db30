/**
 * Deliberate misuses of the typed client (clients/typescript): each line below must fail to compile, and
 * `@ts-expect-error` fails the build (`npm run typecheck`, test/operator/client-types.test.ts) when one compiles. The
 * bodies of POST /send and POST /prospects/state are typed field by field, with their rules (a subject with text or
 * html, or a template alone; reason only with lost; url only with agreed or alone).
 */
import { mailserviceClient, type paths } from '../../clients/typescript';

type SendBody = paths['/send']['post']['requestBody']['content']['application/json'];
type OutcomeBody = paths['/prospects/state']['post']['requestBody']['content']['application/json'];

export const sends: SendBody[] = [
  { to: 'someone@example.com', subject: 'Hi', text: 'Hello' },
  { to: ['a@example.com', 'Bea <b@example.com>'], subject: 'Hi', html: '<p>Hello</p>', metadata: { order: 42, lines: [1, 2] } },
  // a stored template with its variables (docs/templates.md), by alias or by id
  { to: 'someone@example.com', template: 'welcome', variables: { name: 'Ada', plan: { seats: 3 } } },
  { to: 'someone@example.com', template: 7 },
  // @ts-expect-error neither a subject nor a template
  { to: 'someone@example.com', text: 'Hello' },
  // @ts-expect-error a template and a subject: the template gives the subject
  { to: 'someone@example.com', template: 'welcome', subject: 'Hi' },
  // @ts-expect-error a template and a text of its own
  { to: 'someone@example.com', template: 'welcome', text: 'Hello' },
  // @ts-expect-error a template is its id or alias
  { to: 'someone@example.com', template: { id: 7 } },
  // @ts-expect-error a subject is text
  { to: 'someone@example.com', subject: 1, text: 'Hello' },
  // @ts-expect-error neither text nor html
  { to: 'someone@example.com', subject: 'Hi' },
  // @ts-expect-error no recipient
  { subject: 'Hi', text: 'Hello' },
  // @ts-expect-error an unknown field
  { to: 'someone@example.com', subject: 'Hi', text: 'Hello', cc: 'other@example.com' },
  // @ts-expect-error header values are text
  { to: 'someone@example.com', subject: 'Hi', text: 'Hello', headers: { 'X-Order': 42 } },
  // @ts-expect-error an attachment needs its content
  { to: 'someone@example.com', subject: 'Hi', text: 'Hello', attachments: [{ filename: 'a.txt' }] },
];

export const outcomes: OutcomeBody[] = [
  { campaign: 1, email: 'pat@site.example', state: 'replied' },
  { campaign: 1, email: 'pat@site.example', state: 'lost', reason: 'price' },
  { campaign: 1, email: 'pat@site.example', state: 'agreed', url: 'https://site.example/post' },
  { campaign: 1, email: 'pat@site.example', value: 1200 },
  { campaign: 1, email: 'pat@site.example', url: 'https://site.example/post' },
  // @ts-expect-error not a state
  { campaign: 1, email: 'pat@site.example', state: 'bogus' },
  // @ts-expect-error lost needs a reason
  { campaign: 1, email: 'pat@site.example', state: 'lost' },
  // @ts-expect-error a reason goes only with lost
  { campaign: 1, email: 'pat@site.example', state: 'replied', reason: 'price' },
  // @ts-expect-error a url goes only with agreed, or alone
  { campaign: 1, email: 'pat@site.example', state: 'stop', url: 'https://site.example/post' },
  // @ts-expect-error nothing to report
  { campaign: 1, email: 'pat@site.example' },
  // @ts-expect-error the campaign is its id
  { campaign: 'one', email: 'pat@site.example', state: 'replied' },
];

/** The README's and docs/templates.md's calls, as written, through the client itself (compiled, never run). */
export async function documentedCalls(): Promise<void> {
  const api = mailserviceClient('http://localhost:3000', 'msk_x');
  await api.POST('/send', { body: { to: 'someone@example.com', subject: 'Hi', text: 'Hello' } });
  await api.POST('/send', { body: { to: 'someone@example.com', template: 'welcome', variables: { name: 'Ada' } } });
  // @ts-expect-error neither a subject nor a template
  await api.POST('/send', { body: { to: 'someone@example.com' } });
}
