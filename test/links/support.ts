import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { db } from '../../apps/core/src/db';
import { reportOutcome } from '../../apps/core/src/outreach/outcomes';
import { makeCampaign, makeTenant, wantEvents } from '../helpers/factories';
import { addProspect } from '../outreach/support';

type Page = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A loopback web server whose pages a test sets and changes: the pages the link checker fetches. */
export class PageServer {
  private readonly server = http.createServer((req, res) => {
    const page = this.pages.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (page) return page(req, res);
    res.writeHead(404).end('not here');
  });
  readonly pages = new Map<string, Page>();
  /** requests that never get an answer, closed at stop */
  private readonly hanging = new Set<http.ServerResponse>();

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }
  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }
  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }
  html(path: string, body: string): void {
    this.pages.set(path, (_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body));
  }
  redirect(path: string, location: string, status = 302): void {
    this.pages.set(path, (_req, res) => res.writeHead(status, { location }).end());
  }
  hang(path: string): void {
    this.pages.set(path, (_req, res) => {
      this.hanging.add(res);
    });
  }
}

export function usePages(): PageServer {
  const server = new PageServer();
  beforeAll(() => server.start());
  afterAll(() => server.stop());
  return server;
}

/** A links campaign with `target` and one prospect the caller reported agreed with `url` (no check queued). */
export async function agreedProspect(target: string, url: string, anchor?: string) {
  const tenant = await makeTenant({ prospects: true });
  await wantEvents(tenant.account.id);
  const campaign = await makeCampaign(tenant.account.id, tenant.mailbox.id, { goal: 'links', target: { url: target, anchor } });
  const id = await addProspect(tenant.account.id, campaign.id, { email: `owner-${Date.now()}-${Math.random().toString(36).slice(2)}@site.example`, name: 'Owner' });
  const prospect = await db().prospect.findUniqueOrThrow({ where: { id } });
  await reportOutcome(db(), tenant.account.id, { campaign: campaign.id, email: prospect.email!, state: 'agreed', url });
  return { tenant, campaign, id, email: prospect.email! };
}

export const prospectRow = (id: number) => db().prospect.findUniqueOrThrow({ where: { id } });
