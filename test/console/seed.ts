import path from 'node:path';
import request from 'supertest';
import { db, rawQuery } from '../../apps/core/src/db';
import { addDomain } from '../../apps/core/src/domains';
import { createTemplate } from '../../apps/core/src/templates/service';
import type { Page } from 'playwright-core';
import type { ApiApp } from '../../apps/api/src/app';
import { collectProblems, useConsoleBrowser, type ConsoleBrowser } from './browser';
import { makeCampaign, makeList, makeTenant, wantEvents } from '../helpers/factories';

/** What `seedConsole` made: the ids a test links to. */
export interface Seeded {
  account: number;
  mailbox: number;
  list: number;
  listKey: string;
  subscriber: number;
  campaign: number;
  broadcast: number;
  domain: number;
  template: number;
  message: string;
}

/**
 * A service with something on every console page: an account with a mailbox and key, a list of subscribers added
 * through the public API (with tags and fields), a sending domain (its DKIM keys are long values), a template, a
 * broadcast, a campaign with prospects, a webhook, messages over the last two days (a long header and a bounce among
 * them) and suppressions of each kind.
 */
export async function seedConsole(api: ApiApp): Promise<Seeded> {
  const tenant = await makeTenant();
  const account = tenant.account.id;
  const mailbox = tenant.mailbox.id;
  await wantEvents(account);
  const list = await makeList(account, mailbox, { confirm: false, name: 'Weekly letter' });
  const listRow = await db().list.findUniqueOrThrow({ where: { key: list.key } });
  for (let n = 0; n < 12; n++) {
    await request(api.app)
      .post('/api/v1/subscribers')
      .set('Authorization', `Bearer ${tenant.token}`)
      .send({ list: list.key, email: `reader${n}@readers.test`, name: `Reader ${n}`, tags: n % 2 ? ['vip', 'early'] : ['trial'], fields: { plan: n % 3 ? 'pro' : 'free', city: 'Lisbon' } })
      .expect(200);
  }
  const subscriber = await db().subscriber.findFirstOrThrow({ where: { listId: listRow.id }, orderBy: { id: 'asc' } });
  const domain = await addDomain(db(), { account, name: `brand-${account}.example` });
  const template = await createTemplate(db(), { account, kind: 'template', name: 'Welcome', subject: 'Welcome, {{name}}', html: '<p>Hello {{name}}, your plan is {{plan}}.</p>', required: ['name'] });
  const campaign = await makeCampaign(account, mailbox, { name: 'Guest posts' });
  const broadcast = await db().broadcast.create({ data: { accountId: account, listId: listRow.id, subject: 'Winter news', text: 'x', status: 'sent', audience: 12, startedAt: new Date(Date.now() - 3_600_000), finishedAt: new Date(Date.now() - 3_000_000) } });
  await rawQuery(
    db(),
    `INSERT INTO prospects (campaign_id, email, site, name, status, step, created_at)
     SELECT $1, 'editor' || n || '@blog' || n || '.test', 'blog' || n || '.test', 'Editor ' || n, (ARRAY['new','later','replied'])[1 + n % 3]::"ProspectStatus", n % 2, now() - make_interval(mins => n)
     FROM generate_series(1, 8) AS n`,
    [campaign.id],
  );
  const [message] = await rawQuery<{ id: string }>(
    db(),
    `INSERT INTO messages (id, account_id, mailbox_id, kind, "to", subject, message_id_header, status, attempts, smtp_response, sent_at, bounce, created_at, updated_at)
     SELECT gen_random_uuid(), $1, $2, 'transactional', 'r' || n || '@d' || (n % 4) || '.example',
            'Your invoice number ' || n || ' with a subject long enough to need wrapping on a phone screen', '<seed-' || n || '-' || repeat('x', 80) || '@acme.test>',
            (ARRAY['sent','sent','bounced','deferred'])[1 + n % 4]::"MessageStatus", 1,
            '250 2.0.0 OK queued as ' || repeat('A1B2C3', 12),
            now() - make_interval(mins => n * 30),
            CASE WHEN n % 4 = 2 THEN jsonb_build_object('reason', 'userunknown', 'class', 'dead', 'status', '5.1.1', 'smtp_code', '550', 'diagnostic', '550 5.1.1 no such user', 'dead', true, 'at', now()) END,
            now() - make_interval(mins => n * 30), now() - make_interval(mins => n * 30)
     FROM generate_series(1, 90) AS n RETURNING id`,
    [account, mailbox],
  );
  await db().suppression.createMany({
    data: [
      { accountId: account, email: 'gone@dead.test', reason: 'bounced', bounceReason: 'userunknown', detail: '550 5.1.1 no such user' },
      { accountId: account, email: 'angry@complain.test', reason: 'complained', detail: 'feedback report' },
    ],
  });
  return { account, mailbox, list: listRow.id, listKey: list.key, subscriber: subscriber.id, campaign: campaign.id, broadcast: broadcast.id, domain: domain.id, template: template.id, message: message!.id };
}

/** CONSOLE_SCREENSHOT=1: where the browser tests write the pictures of the docs; null otherwise. */
export const DOCS_SHOTS = process.env.CONSOLE_SCREENSHOT ? path.join(__dirname, '../../docs') : null;

/**
 * The file's API with `seedConsole`'s data, seen by a signed-in chromium at 1366 px (browser.ts), made before the file's
 * tests; a CSP violation or a script error on a page fails the test it happens in.
 */
export function useSeededConsole(ctx: { readonly api: ApiApp }): { readonly view: ConsoleBrowser; readonly page: Page; readonly base: string; readonly seeded: Seeded } {
  const problems: string[] = [];
  const view = useConsoleBrowser(ctx, { signIn: true, viewport: { width: 1366, height: 900 }, context: collectProblems(problems) });
  let seeded: Seeded | undefined;
  beforeAll(async () => {
    seeded = await seedConsole(ctx.api);
  });
  afterEach(() => expect(problems.splice(0)).toEqual([]));
  return {
    view,
    get page() {
      return view.page;
    },
    get base() {
      return view.base;
    },
    get seeded() {
      if (!seeded) throw new Error('useSeededConsole(): the data is seeded in beforeAll');
      return seeded;
    },
  };
}
