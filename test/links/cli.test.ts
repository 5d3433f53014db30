import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeTenant } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';

describe('npm run admin: a campaign target', () => {
  it('is set with --target/--anchor on create and removed with --no-target', async () => {
    const tenant = await makeTenant();
    const steps = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'steps-')), 'steps.json');
    fs.writeFileSync(steps, JSON.stringify([{ subject: 'Hi', body: 'Hello', delay_hours: 0 }]));
    const created = await runAdmin('campaign', 'create', '--account', String(tenant.account.id), '--name', 'Links', '--goal', 'links',
      '--mailbox', String(tenant.mailbox.id), '--steps', steps, '--target', 'https://shop.example/products', '--anchor', 'the shop');
    expect(created.err).toBe('');
    expect(created.out.campaign.target).toEqual({ url: 'https://shop.example/products', anchor: 'the shop' });
    const removed = await runAdmin('campaign', 'set', String(created.out.campaign.id), '--no-target');
    expect(removed.out.campaign.target).toBeNull();
  }, 60_000);
});
