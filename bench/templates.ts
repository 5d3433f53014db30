/**
 * The bench's `templates` phase (BENCH_ONLY=templates): the delivery phase with a stored template against the same
 * emails sent plain. A 20 KB layout with a `<style>` block and a template of 10 variables; one side sends
 * `{template, variables}`, the other the same email already written (subject and html; the service makes the text part
 * of both from the html). Each side sends MESSAGES emails a turn, in turns, from accept to the last one on the sink.
 * Target: the template side's rate >= 0.95 of the plain one's.
 */
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { compileEmail, renderEmail } from '../apps/core/src/templates/content';

export interface TemplatesPhaseDeps {
  apiPort: number;
  messages: number;
  connections: number;
  turns: number;
  startApi: () => ChildProcess;
  startWorker: () => ChildProcess;
  stop: (child: ChildProcess) => Promise<void>;
  up: (port: number) => Promise<void>;
  makeTenant: () => Promise<{ token: string; account: number }>;
  admin: <T>(pathname: string, body: unknown) => Promise<T>;
  sinkCount: () => Promise<number>;
  resetSink: () => Promise<void>;
  until: (check: () => Promise<boolean>, timeoutMs: number, what: string) => Promise<void>;
  settle: () => Promise<void>;
}

/** A newsletter-like layout of about 20 KB: a style sheet, a header, a table of sections and a footer. */
export function benchLayout(): string {
  const section = (i: number) =>
    `<tr><td class="section"><h2 class="title">Section ${i}</h2><p class="body">This part of the layout stands for the fixed text a brand puts around every email: ` +
    `a short paragraph, a <a href="https://example.com/s/${i}" class="link">link</a> and some words to make it as long as a real one.</p></td></tr>\n`;
  const rows = Array.from({ length: 72 }, (_, i) => section(i + 1)).join('');
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; background: #f4f4f4; font-family: Arial, sans-serif }
.wrap { max-width: 600px; margin: 0 auto; background: #ffffff }
.header { padding: 24px; background: #1f5fbf; color: #ffffff }
.section { padding: 12px 24px; border-bottom: 1px solid #eeeeee }
.title { font-size: 18px; margin: 0 0 8px }
.body { font-size: 14px; line-height: 1.5; color: #333333 }
.link { color: #1f5fbf }
.footer { padding: 24px; font-size: 12px; color: #777777 }
</style></head><body><table class="wrap"><tr><td class="header">{{ company }} news</td></tr>
<tr><td class="section">{{ content }}</td></tr>
${rows}<tr><td class="footer">{{ company }}, {{ address }}. <a href="{{ unsubscribe }}" class="link">Unsubscribe</a></td></tr></table></body></html>`;
}

const TEMPLATE_HTML = `<h1 class="title">Hello {{ name }},</h1>
<p class="body">Your order {{ order }} of {{ items }} items ({{ total }}) ships on {{ date }} to {{ city }}.</p>
<p class="body">Questions? Write to {{ support }}.</p>`;

export const VARIABLES = {
  name: 'Ann <Reader>',
  order: 'A-1042',
  items: 3,
  total: '$42.00',
  date: '28 Nov',
  city: 'Oslo',
  support: 'help@example.com',
  company: 'Acme & Co',
  address: '1 Main St',
  unsubscribe: 'https://example.com/u/abc?x=1&y=2',
};

export async function templatesPhase(deps: TemplatesPhaseDeps) {
  const api = deps.startApi();
  await deps.up(deps.apiPort);
  const worker = deps.startWorker();
  const tenant = await deps.makeTenant();
  const layoutHtml = benchLayout();
  const { template: layout } = await deps.admin<{ template: { id: number } }>('/templates', { account: tenant.account, kind: 'layout', name: 'bench layout', html: layoutHtml });
  await deps.admin('/templates', {
    account: tenant.account,
    name: 'bench',
    alias: 'bench',
    layout: layout.id,
    subject: 'Your order {{ order }}, {{ name }}',
    html: TEMPLATE_HTML,
    required: ['name', 'order'],
  });
  // the plain side sends what the template renders (inlined html), so both store and deliver the same bytes
  const plain = renderEmail(compileEmail({ subject: 'Your order {{ order }}, {{ name }}', html: TEMPLATE_HTML, text: null }, { layoutHtml, inlineCss: true }), VARIABLES);
  const bodies = {
    plain: JSON.stringify({ to: 'reader@example.com', subject: plain.subject, html: plain.html }),
    template: JSON.stringify({ to: 'reader@example.com', template: 'bench', variables: VARIABLES }),
  };
  const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${tenant.token}` };
  const refused = { plain: 0, template: 0 };
  const batch = async (side: 'plain' | 'template', amount: number) => {
    await deps.resetSink();
    const t0 = performance.now();
    const accepted = await autocannon({ url: `http://127.0.0.1:${deps.apiPort}/api/v1/send`, method: 'POST', headers, body: bodies[side], connections: deps.connections, amount });
    refused[side] += accepted.non2xx + accepted.errors;
    const delivered = accepted['2xx'];
    await deps.until(async () => (await deps.sinkCount()) >= delivered, 10 * 60_000, `${delivered} ${side} deliveries`);
    return { seconds: (performance.now() - t0) / 1000, delivered };
  };
  // warm-up of both paths (JIT, the template cache), outside the clock
  await batch('plain', Math.ceil(deps.messages / 2));
  await batch('template', Math.ceil(deps.messages / 2));
  await deps.settle();
  refused.plain = refused.template = 0;
  const seconds = { plain: 0, template: 0 };
  const delivered = { plain: 0, template: 0 };
  for (let i = 0; i < deps.turns; i++) {
    const order: ('plain' | 'template')[] = i % 2 === 0 ? ['plain', 'template'] : ['template', 'plain'];
    for (const side of order) {
      const turn = await batch(side, deps.messages);
      seconds[side] += turn.seconds;
      delivered[side] += turn.delivered;
    }
  }
  await deps.stop(worker);
  await deps.stop(api);
  const plainRate = delivered.plain / seconds.plain;
  const templateRate = delivered.template / seconds.template;
  return {
    messages: deps.messages,
    turns: deps.turns,
    layoutBytes: Buffer.byteLength(layoutHtml),
    variables: Object.keys(VARIABLES).length,
    plainPerSecond: Math.round(plainRate),
    templatePerSecond: Math.round(templateRate),
    ratio: +(templateRate / plainRate).toFixed(2),
    refused,
  };
}
