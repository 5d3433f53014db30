import { db } from '../../apps/core/src/db';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { runAdmin } from '../helpers/processes';
import { useApi } from '../helpers/api';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** `npm run admin -- campaign|mailbox ...` sets and shows the outreach fields of docs/outreach.md, as real processes. */
useApi();
jest.setTimeout(120_000);

describe('the CLI and outreach', () => {
  it('sets a window, auto-pause and opt-out on a campaign, pacing and warm-up on a mailbox, and prints stats', async () => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id);
    const steps = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cli-')), 'steps.json');
    fs.writeFileSync(steps, JSON.stringify([{ subject: 'Hi', body: 'Hello {{unsubscribe_url}}', delay_hours: 0 }]));

    const created = await runAdmin(
      'campaign', 'create', '--account', String(account.id), '--name', 'CLI', '--goal', 'sales', '--mailbox', String(mailbox.id), '--steps', steps,
      '--timezone', 'Europe/Paris', '--days', '1,2,3,4,5', '--from', '08:30', '--to', '18:00', '--bounce-rate', '0.04', '--no-unsubscribe',
    );
    expect(created.err).toBe('');
    expect(created.out.campaign).toMatchObject({
      schedule: { timezone: 'Europe/Paris', days: [1, 2, 3, 4, 5], from: '08:30', to: '18:00' },
      pause_on: { bounce_rate: 0.04, complaint_rate: 0.003, window: 100 },
      paused_reason: null,
      unsubscribe: false,
    });
    const id = String(created.out.campaign.id);
    const changed = await runAdmin('campaign', 'set', id, '--no-schedule', '--no-pause', '--unsubscribe');
    expect(changed.out.campaign).toMatchObject({ schedule: null, pause_on: null, unsubscribe: true });

    const refused = await runAdmin('campaign', 'set', id, '--timezone', 'Nowhere/Land', '--days', '1', '--from', '09:00', '--to', '10:00');
    expect(refused.code).not.toBe(0);
    expect(refused.err).toMatch(/timezone must be an IANA time zone/);
    expect((await db().campaign.findUniqueOrThrow({ where: { id: Number(id) } })).schedule).toBeNull();

    const stats = await runAdmin('campaign', 'stats', id);
    expect(stats.out.stats.steps).toEqual([{ step: 1, sent: 0, bounced: 0, replied: 0, auto_replied: 0, unsubscribed: 0 }]);

    const paced = await runAdmin('mailbox', 'set', String(mailbox.id), '--gap-jitter', '0.6', '--warmup-start', '5', '--warmup-step', '3');
    expect(paced.out.mailbox).toMatchObject({ gap_jitter: 0.6, warmup: { start: 5, step: 3 }, effective_daily_limit: 5 });
    const badJitter = await runAdmin('mailbox', 'set', String(mailbox.id), '--gap-jitter', '2');
    expect(badJitter.err).toMatch(/--gap-jitter/);
    const ended = await runAdmin('mailbox', 'set', String(mailbox.id), '--no-warmup');
    expect(ended.out.mailbox).toMatchObject({ gap_jitter: 0.6, warmup: null, effective_daily_limit: 50 });
  });

  it('creates a campaign over several mailboxes (--mailboxes) and changes its rotation; another account\'s mailbox is refused', async () => {
    const account = await makeAccount();
    const [a, b] = [await makeMailbox(account.id), await makeMailbox(account.id)];
    const stranger = await makeMailbox((await makeAccount()).id);
    const steps = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cli-')), 'steps.json');
    fs.writeFileSync(steps, JSON.stringify([{ subject: 'Hi', body: 'Hello', delay_hours: 0 }]));
    const created = await runAdmin('campaign', 'create', '--account', String(account.id), '--name', 'Rotation', '--goal', 'sales', '--mailboxes', `${a.id},${b.id}`, '--steps', steps);
    expect(created.err).toBe('');
    expect(created.out.campaign).toMatchObject({ mailbox: a.id, mailboxes: [a.id, b.id] });
    const id = String(created.out.campaign.id);
    const changed = await runAdmin('campaign', 'set', id, '--mailboxes', String(b.id));
    expect(changed.out.campaign).toMatchObject({ mailbox: b.id, mailboxes: [b.id], retired_mailboxes: [a.id] });
    const refused = await runAdmin('campaign', 'set', id, '--mailboxes', `${b.id},${stranger.id}`);
    expect(refused.code).not.toBe(0);
    expect(refused.err).toMatch(new RegExp(`no mailbox with id ${stranger.id}`));
  });
});
