import express, { Router, type RequestHandler } from 'express';
import type { Db } from '../../../core/src/db';
import { BadRequest, LimitReached } from '../../../core/src/errors';
import * as page from '../../../core/src/preferences/html';
import { leaveByPreferences, mailPreferencesLink, PAUSE_DAYS, preferencesOf, savePreferences, type PauseDays, type PreferenceChanges } from '../../../core/src/preferences/service';
import { findListByKey, formInput } from '../../../core/src/subscribers';
import { reserveLinkEmail, reserveLinkRequest } from '../../../core/src/subscribers/limit';
import type { BodyBudget } from '../middleware/body-budget';
import { methodNotAllowed } from '../middleware/errors';
import { checkedBody } from '../middleware/text';
import { addressOf, clientOf } from '../middleware/client';
import { pageErrors, send } from './pages';

/**
 * The preference centre (docs/preferences.md) under PUBLIC_URL: `/preferences/<token>`, the signed page every list
 * email links (GET shows, POST saves or leaves), and `/preferences/list/<key>`, where a person asks for their link by
 * address (the same answer whatever the address; rate-limited per network and per address).
 */
export function preferencesRouter(db: Db, budget: BodyBudget): Router {
  const router = Router();
  const form = budget.around(checkedBody(express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 120 })));

  router
    .route('/preferences/list/:key')
    .get(async (req, res) => {
      const list = await findListByKey(db, req.params.key);
      if (!list) return send(res, 404, page.unknownPreferencesLinkPage());
      send(res, 200, page.requestLinkPage(list.name));
    })
    .post(linkRequestLimit, form, async (req, res) => {
      const list = await findListByKey(db, req.params.key);
      if (!list) return send(res, 404, page.unknownPreferencesLinkPage());
      const body = (req.body ?? {}) as Record<string, unknown>;
      const { error, value } = formInput.validate({ email: body.email }, { abortEarly: true, errors: { wrap: { label: false } } });
      if (error) return send(res, 400, page.requestLinkPage(list.name, { email: String(body.email ?? ''), error: error.details[0]?.message ?? 'Please check the address' }));
      // one address is sent few links, whoever asks: past that the answer is the same and nothing is sent
      if ((await reserveLinkEmail(list.key, value.email)).taken) await mailPreferencesLink(db, list, value.email);
      send(res, 200, page.linkSentPage(list.name));
    })
    .all(methodNotAllowed);

  router
    .route('/preferences/:token')
    .get(async (req, res) => {
      const view = await preferencesOf(db, req.params.token);
      if (!view) return send(res, 404, page.unknownPreferencesLinkPage());
      send(res, 200, page.preferencesPage(view));
    })
    .post(form, async (req, res) => {
      const shown = await preferencesOf(db, req.params.token);
      if (!shown) return send(res, 404, page.unknownPreferencesLinkPage());
      const body = (req.body ?? {}) as Record<string, unknown>;
      const consent = { source: 'preference_page' as const, ip: addressOf(req), formText: page.preferencesText(shown) };
      if (body.action === 'leave') {
        await leaveByPreferences(db, req.params.token, consent);
        return send(res, 200, page.leftPage(shown.listName));
      }
      let changes: PreferenceChanges;
      try {
        changes = changesOf(body);
      } catch (err) {
        if (err instanceof BadRequest) return send(res, 400, page.preferencesPage(shown, { error: err.message }));
        throw err;
      }
      try {
        const saved = await savePreferences(db, req.params.token, changes, consent);
        if (!saved) return send(res, 404, page.unknownPreferencesLinkPage());
        send(res, 200, page.preferencesPage(saved, { note: 'Your choices are saved.' }));
      } catch (err) {
        // a topic the list does not have: nothing saved
        if (err instanceof BadRequest) return send(res, 400, page.preferencesPage(shown, { error: err.message }));
        throw err;
      }
    })
    .all(methodNotAllowed);

  router.use(pageErrors);
  return router;
}

/** The page's form as changes: ticked topics (when the form showed topics), the name, a pause. */
function changesOf(body: Record<string, unknown>): PreferenceChanges {
  const changes: PreferenceChanges = {};
  if (body.topics_shown !== undefined) {
    const ticked = [body.topic ?? []].flat();
    if (!ticked.every((t): t is string => typeof t === 'string')) throw new BadRequest('topics must be text');
    changes.topics = [...new Set(ticked)];
  }
  if (body.name !== undefined) {
    if (typeof body.name !== 'string' || body.name.length > 200) throw new BadRequest('the name must be text of at most 200 characters');
    changes.name = body.name.trim();
  }
  if (body.pause !== undefined && body.pause !== '') {
    if (body.pause === 'resume') changes.pause = 'resume';
    else if (PAUSE_DAYS.includes(Number(body.pause) as PauseDays)) changes.pause = Number(body.pause) as PauseDays;
    else throw new BadRequest(`a pause is ${PAUSE_DAYS.join(' or ')} days`);
  }
  return changes;
}

/** One network may ask for links only so often (before the body is read). */
const linkRequestLimit: RequestHandler<{ key: string }> = async (req, _res, next) => {
  const reservation = await reserveLinkRequest(clientOf(req));
  if (!reservation.taken) throw new LimitReached('too many link requests from this address', reservation.retryAfterMs / 1000);
  next();
};
