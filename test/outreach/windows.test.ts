import { db } from '../../apps/core/src/db';
import { queueSteps } from '../../apps/core/src/outreach/scheduler';
import { runSequenceStep } from '../../apps/core/src/outreach/steps';
import { jobId, queue, QUEUE } from '../../apps/core/src/queues';
import { insideWindow, isTimeZone, localTime, nextWindowOpen, windowedAt, zoneFor, type Schedule } from '../../apps/core/src/outreach/windows';
import { asAdmin, useApi } from '../helpers/api';
import { makeAccount, makeMailbox } from '../helpers/factories';
import { addProspect, outreach } from './support';

/**
 * Sending windows (docs/outreach.md). The rules are judged at a moment given to them, so the clock is the test's: no
 * test waits for a window to open.
 */
const ctx = useApi();
const weekdays: Schedule = { timezone: 'Europe/Berlin', days: [1, 2, 3, 4, 5], from: '09:00', to: '17:00' };
const at = (iso: string) => new Date(iso);

describe('the window rules, on a clock the test sets', () => {
  it('knows IANA zones from the platform and refuses made-up ones', () => {
    expect(isTimeZone('Europe/Berlin')).toBe(true);
    expect(isTimeZone('America/Argentina/Buenos_Aires')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    expect(isTimeZone('')).toBe(false);
    expect(isTimeZone(42)).toBe(false);
  });

  it('reads local weekday and time in the zone, daylight saving included', () => {
    // winter: Berlin is UTC+1; summer: UTC+2
    expect(localTime('Europe/Berlin', at('2026-01-14T08:30:00Z'))).toEqual({ weekday: 3, minute: 9 * 60 + 30 });
    expect(localTime('Europe/Berlin', at('2026-07-15T08:30:00Z'))).toEqual({ weekday: 3, minute: 10 * 60 + 30 });
    expect(localTime('America/New_York', at('2026-01-14T03:00:00Z'))).toEqual({ weekday: 2, minute: 22 * 60 });
    // half- and quarter-hour zones, and the minute on either side of a change (the offset is read per quarter-hour)
    expect(localTime('Asia/Kolkata', at('2026-01-14T20:00:00Z'))).toEqual({ weekday: 4, minute: 1 * 60 + 30 });
    expect(localTime('Asia/Kathmandu', at('2026-01-14T00:00:00Z'))).toEqual({ weekday: 3, minute: 5 * 60 + 45 });
    expect(localTime('Europe/Berlin', at('2026-03-29T00:59:00Z'))).toEqual({ weekday: 7, minute: 1 * 60 + 59 });
    expect(localTime('Europe/Berlin', at('2026-03-29T01:00:00Z'))).toEqual({ weekday: 7, minute: 3 * 60 });
  });

  it('is inside from `from` (inclusive) to `to` (exclusive), on the days listed', () => {
    expect(insideWindow(weekdays, 'Europe/Berlin', at('2026-01-14T08:00:00Z'))).toBe(true); // Wed 09:00
    expect(insideWindow(weekdays, 'Europe/Berlin', at('2026-01-14T07:59:00Z'))).toBe(false); // Wed 08:59
    expect(insideWindow(weekdays, 'Europe/Berlin', at('2026-01-14T16:00:00Z'))).toBe(false); // Wed 17:00
    expect(insideWindow(weekdays, 'Europe/Berlin', at('2026-01-17T10:00:00Z'))).toBe(false); // Sat
  });

  it('moves a step due outside the window to its next opening', () => {
    // inside: unchanged
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-01-14T10:00:00Z'))).toEqual(at('2026-01-14T10:00:00Z'));
    // before the opening the same day
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-01-14T05:12:34Z'))).toEqual(at('2026-01-14T08:00:00Z'));
    // after the close: the next morning
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-01-14T18:00:00Z'))).toEqual(at('2026-01-15T08:00:00Z'));
    // Friday evening: Monday morning
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-01-16T17:00:00Z'))).toEqual(at('2026-01-19T08:00:00Z'));
    // a Sunday-only window
    const sundays: Schedule = { timezone: 'Asia/Tokyo', days: [7], from: '10:00', to: '11:00' };
    expect(nextWindowOpen(sundays, 'Asia/Tokyo', at('2026-01-14T00:00:00Z'))).toEqual(at('2026-01-18T01:00:00Z'));
  });

  it('opens at the local time across daylight-saving changes', () => {
    // Europe moves to summer time on Sunday 29 March 2026 (02:00 -> 03:00): Friday evening's step goes out Monday 09:00
    // CEST = 07:00 UTC, not 08:00
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-03-27T17:00:00Z'))).toEqual(at('2026-03-30T07:00:00Z'));
    // back to winter time on Sunday 25 October 2026: Monday 09:00 CET = 08:00 UTC
    expect(nextWindowOpen(weekdays, 'Europe/Berlin', at('2026-10-23T17:00:00Z'))).toEqual(at('2026-10-26T08:00:00Z'));
    // a window that opens on the day of the change itself
    const sundayMorning: Schedule = { timezone: 'America/New_York', days: [7], from: '09:00', to: '10:00' };
    // US summer time starts Sunday 8 March 2026: 09:00 EDT = 13:00 UTC
    expect(nextWindowOpen(sundayMorning, 'America/New_York', at('2026-03-07T12:00:00Z'))).toEqual(at('2026-03-08T13:00:00Z'));
    // a night window across the missing hour: 01:00-04:00 local on that Sunday opens at 01:00 EST = 06:00 UTC
    const night: Schedule = { timezone: 'America/New_York', days: [7], from: '01:00', to: '04:00' };
    expect(nextWindowOpen(night, 'America/New_York', at('2026-03-07T12:00:00Z'))).toEqual(at('2026-03-08T06:00:00Z'));
  });

  it('"24:00" closes at the end of the day', () => {
    const evenings: Schedule = { timezone: 'UTC', days: [3], from: '20:00', to: '24:00' };
    expect(insideWindow(evenings, 'UTC', at('2026-01-14T23:59:00Z'))).toBe(true);
    expect(nextWindowOpen(evenings, 'UTC', at('2026-01-15T00:00:00Z'))).toEqual(at('2026-01-21T20:00:00Z'));
  });

  it("judges a prospect in its own fields.timezone when that is a valid zone, else in the campaign's", () => {
    expect(zoneFor(weekdays, { timezone: 'America/Los_Angeles' })).toBe('America/Los_Angeles');
    expect(zoneFor(weekdays, { timezone: 'Nowhere/Else' })).toBe('Europe/Berlin');
    expect(zoneFor(weekdays, {})).toBe('Europe/Berlin');
    // 10:00 in Berlin is 01:00 in Los Angeles: Berlin sends now, Los Angeles at 09:00 PST = 17:00 UTC
    const due = at('2026-01-14T09:00:00Z');
    expect(windowedAt(weekdays, {}, due)).toEqual(due);
    expect(windowedAt(weekdays, { timezone: 'America/Los_Angeles' }, due)).toEqual(at('2026-01-14T17:00:00Z'));
    expect(windowedAt(null, { timezone: 'America/Los_Angeles' }, due)).toEqual(due);
  });
});

/** A window, in UTC, that is shut right now (today's weekday excluded), and one that is open now. */
function shutNow(): Schedule {
  const today = localTime('UTC', new Date()).weekday;
  return { timezone: 'UTC', days: [1, 2, 3, 4, 5, 6, 7].filter((d) => d !== today), from: '00:00', to: '24:00' };
}
const openNow: Schedule = { timezone: 'UTC', days: [1, 2, 3, 4, 5, 6, 7], from: '00:00', to: '24:00' };

describe('the step writer keeps to the window', () => {
  it('defers a due step outside the window to its opening, holding no mailbox slot, and writes it inside', async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: shutNow() }).expect(200);
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'ann@reader.org' });
    // added while the window is shut: step 1 is put at the opening already
    const added = await db().prospect.findUniqueOrThrow({ where: { id } });
    const opening = nextWindowOpen(shutNow(), 'UTC', new Date())!;
    expect(added.nextAt).toEqual(opening);

    // due now anyway (say the window changed after the add): the writer defers to the opening
    await db().prospect.update({ where: { id }, data: { nextAt: new Date(Date.now() - 1000) } });
    const outcome = await runSequenceStep(db(), id, 1);
    expect(outcome).toMatchObject({ kind: 'deferred', why: 'window' });
    expect((outcome as { until: Date }).until.getTime()).toBe(nextWindowOpen(shutNow(), 'UTC', new Date())!.getTime());
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).nextAt).toEqual((outcome as { until: Date }).until);
    expect((await db().mailbox.findUniqueOrThrow({ where: { id: tenant.mailbox.id } })).sequenceCount).toBe(0);
    expect(await db().message.count({ where: { prospectId: id } })).toBe(0);

    // once the window is open, the step is written
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: openNow }).expect(200);
    await db().prospect.update({ where: { id }, data: { nextAt: new Date(Date.now() - 1000) } });
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'written' });
  });

  it("uses the prospect's fields.timezone over the campaign's zone", async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    // a window on the weekday it is now at UTC+14: open for the prospect living there, for the others when it is that day at UTC
    const now = new Date();
    const kiribati = localTime('Pacific/Kiritimati', now).weekday; // UTC+14
    const schedule: Schedule = { timezone: 'UTC', days: [kiribati], from: '00:00', to: '24:00' };
    const utcDay = localTime('UTC', now).weekday;
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule }).expect(200);
    const local = await addProspect(tenant.account.id, campaign.id, { email: 'far@reader.org', fields: { timezone: 'Pacific/Kiritimati' } });
    const plain = await addProspect(tenant.account.id, campaign.id, { email: 'near@reader.org' });
    await db().prospect.updateMany({ where: { id: { in: [local, plain] } }, data: { nextAt: new Date(Date.now() - 1000) } });
    expect(await runSequenceStep(db(), local, 1)).toMatchObject({ kind: 'written' });
    expect(await runSequenceStep(db(), plain, 1)).toMatchObject({ kind: utcDay === kiribati ? 'written' : 'deferred' });
  });
});

describe('schedule in the admin API', () => {
  it('stores, shows and clears a campaign schedule', async () => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id);
    const admin = asAdmin(ctx.api);
    const created = await admin
      .post('/admin/api/campaigns')
      .send({ account: account.id, name: 'c', goal: 'sales', mailbox: mailbox.id, steps: [{ subject: 's', body: 'b', delay_hours: 0 }], schedule: { ...weekdays, days: [5, 1, 3] } })
      .expect(201);
    expect(created.body.campaign.schedule).toEqual({ ...weekdays, days: [1, 3, 5] });
    const id = created.body.campaign.id;
    expect((await admin.get(`/admin/api/campaigns/${id}`).expect(200)).body.campaign.schedule).toEqual({ ...weekdays, days: [1, 3, 5] });
    expect((await admin.patch(`/admin/api/campaigns/${id}`).send({ schedule: null }).expect(200)).body.campaign.schedule).toBeNull();
  });

  it.each([
    [{ ...weekdays, timezone: 'Mars/Olympus' }, /timezone/],
    [{ ...weekdays, from: '17:00', to: '09:00' }, /schedule\.from must be before schedule\.to/],
    [{ ...weekdays, from: '10:00', to: '10:00' }, /schedule\.from must be before schedule\.to/],
    [{ ...weekdays, days: [0, 1] }, /days/],
    [{ ...weekdays, days: [8] }, /days/],
    [{ ...weekdays, days: [] }, /days/],
    [{ ...weekdays, from: '9am' }, /schedule\.from/],
    [{ ...weekdays, to: '24:30' }, /schedule\.to/],
  ])('refuses schedule %j with 400 naming the field, storing nothing', async (schedule, words) => {
    const account = await makeAccount();
    const mailbox = await makeMailbox(account.id);
    const admin = asAdmin(ctx.api);
    const before = await db().campaign.count();
    const refused = await admin
      .post('/admin/api/campaigns')
      .send({ account: account.id, name: 'c', goal: 'sales', mailbox: mailbox.id, steps: [{ subject: 's', body: 'b', delay_hours: 0 }], schedule })
      .expect(400);
    expect(refused.body).toEqual({ ok: false, error: expect.stringMatching(words) });
    expect(await db().campaign.count()).toBe(before);
    const existing = await admin
      .post('/admin/api/campaigns')
      .send({ account: account.id, name: 'c', goal: 'sales', mailbox: mailbox.id, steps: [{ subject: 's', body: 'b', delay_hours: 0 }], schedule: weekdays })
      .expect(201);
    const patched = await admin.patch(`/admin/api/campaigns/${existing.body.campaign.id}`).send({ schedule }).expect(400);
    expect(patched.body.error).toMatch(words);
    expect((await db().campaign.findUniqueOrThrow({ where: { id: existing.body.campaign.id } })).schedule).toEqual(weekdays);
  });
});

describe('held steps are planned again when what held them changes', () => {
  const due = async (id: number) => {
    const p = await db().prospect.findUniqueOrThrow({ where: { id } });
    return p.nextAt !== null && p.nextAt.getTime() <= Date.now();
  };

  it('a schedule widened to every day, all day, releases a step parked for the old opening, and its delayed job runs now', async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: shutNow() }).expect(200);
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'parked@reader.org' });
    const opening = nextWindowOpen(shutNow(), 'UTC', new Date())!;
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).nextAt).toEqual(opening);
    await queueSteps([{ prospectId: id, step: 1, nextAt: opening }]);
    const job = () => queue(QUEUE.sequence).getJob(jobId.sequence(id, 1));
    expect(await (await job())!.getState()).toBe('delayed');

    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: openNow }).expect(200);
    expect(await due(id)).toBe(true);
    // the admin change kicked the scheduler: the job no longer waits for the old opening
    expect(await (await job())!.getState()).not.toBe('delayed');
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'written' });
  });

  it('a step the writer deferred to the window is released by a wider window, and held again by a narrower one', async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'late@reader.org' });
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: shutNow() }).expect(200);
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'deferred', why: 'window' });
    expect(await due(id)).toBe(false);
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: openNow }).expect(200);
    expect(await due(id)).toBe(true);
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: shutNow() }).expect(200);
    expect((await db().prospect.findUniqueOrThrow({ where: { id } })).nextAt).toEqual(nextWindowOpen(shutNow(), 'UTC', new Date()));
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: null }).expect(200);
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'written' });
  });

  it("a mailbox's daily limit raised releases a step held for tomorrow", async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9', mailbox: { daily_limit: 0 } });
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'capped@reader.org' });
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'deferred', why: 'daily_limit' });
    expect(await due(id)).toBe(false);
    await asAdmin(ctx.api).patch(`/admin/api/mailboxes/${tenant.mailbox.id}`).send({ daily_limit: 10 }).expect(200);
    expect(await due(id)).toBe(true);
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'written' });
  });

  it("a prospect's time zone changed to one whose window is open releases their held step", async () => {
    const { tenant, campaign } = await outreach({ smtp: 'smtp://127.0.0.1:9' });
    const now = new Date();
    const today = localTime('UTC', now).weekday;
    // UTC+14 and UTC-11 are 25 hours apart: one of them is on another weekday than UTC now
    const elsewhere = ['Pacific/Kiritimati', 'Pacific/Pago_Pago'].find((zone) => localTime(zone, now).weekday !== today)!;
    await asAdmin(ctx.api).patch(`/admin/api/campaigns/${campaign.id}`).send({ schedule: { timezone: 'UTC', days: [today], from: '00:00', to: '24:00' } }).expect(200);
    const id = await addProspect(tenant.account.id, campaign.id, { email: 'moved@reader.org', fields: { timezone: elsewhere } });
    expect(await due(id)).toBe(false);
    await addProspect(tenant.account.id, campaign.id, { email: 'moved@reader.org', fields: { timezone: 'UTC' } });
    expect(await due(id)).toBe(true);
    expect(await runSequenceStep(db(), id, 1)).toMatchObject({ kind: 'written' });
  });
});
