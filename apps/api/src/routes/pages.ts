import express, { Router, type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import type { Db } from '../../../core/src/db';
import { LimitReached } from '../../../core/src/errors';
import { reserveFormPost } from '../../../core/src/subscribers/limit';
import { addSubscriber, confirmByLink, findListByKey, formInput, inspectLink } from '../../../core/src/subscribers';
import * as html from '../../../core/src/subscribers/html';
import type { BodyBudget } from '../middleware/body-budget';
import { methodNotAllowed, refusalOf } from '../middleware/errors';
import { checkedBody } from '../middleware/text';
import { addressOf, clientOf } from '../middleware/client';
import { topicsOf } from '../../../core/src/topics';

/**
 * The public HTML pages under PUBLIC_URL: the confirmation link (GET asks, POST confirms) and the list's hosted form.
 * Nothing here needs a key; every answer is a small HTML page, including refusals.
 */
export function pagesRouter(db: Db, budget: BodyBudget): Router {
  const router = Router();
  const form = budget.around(checkedBody(express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 })));

  router
    .route('/confirm/:token')
    .get(async (req, res) => {
      const { state, listName } = await inspectLink(db, req.params.token);
      if (state === 'valid') return send(res, 200, html.confirmPage(listName));
      return send(res, ...linkProblem(state));
    })
    .post(async (req, res) => {
      const { result, listName } = await confirmByLink(db, req.params.token, new Date(), { source: 'form', ip: addressOf(req) });
      if (result === 'confirmed') return send(res, 200, html.confirmedPage(listName));
      if (result === 'already') return send(res, 200, html.alreadyConfirmedPage(listName));
      return send(res, ...linkProblem(result === 'gone' ? 'used' : result));
    })
    .all(methodNotAllowed);

  router
    .route('/f/:key')
    .get(async (req, res) => {
      const list = await findListByKey(db, req.params.key);
      if (!list) return send(res, 404, html.notFoundPage());
      send(res, 200, html.subscribeFormPage(list.name, {}, formTopics(list)));
    })
    .post(formClientLimit, form, async (req, res) => {
      const list = await findListByKey(db, req.params.key);
      if (!list) return send(res, 404, html.notFoundPage());
      const body = (req.body ?? {}) as Record<string, unknown>;
      // a bot filled the hidden field: the same answer as a person gets, and nothing stored or sent
      // (sent twice, `website=&website=x`, the field reads as a list: any filled value counts)
      if ([body[html.HONEYPOT_FIELD]].flat().some((v) => typeof v === 'string' && v !== '')) {
        return send(res, 200, html.checkInboxPage(list.name));
      }
      const { error, value } = formInput.validate(body, { abortEarly: true, errors: { wrap: { label: false } } });
      if (error) {
        const state = { email: String(body.email ?? ''), name: String(body.name ?? ''), error: error.details[0]?.message ?? 'Please check the form' };
        return send(res, 400, html.subscribeFormPage(list.name, state, formTopics(list)));
      }
      const topics = formTopics(list);
      const ticked = [body.topic ?? []].flat();
      // the public topics the form showed, each in when ticked (a form without topics keeps the defaults)
      const choices = body.topics_shown === undefined ? undefined : Object.fromEntries(topics.map((t) => [t.id, ticked.includes(t.id)]));
      const consent = { source: 'form' as const, ip: addressOf(req), formText: html.subscribeFormText(list.name, topics) };
      await addSubscriber(db, list, { email: value.email, name: value.name, topics: choices }, 'form', consent);
      send(res, 200, html.checkInboxPage(list.name));
    })
    .all(methodNotAllowed);

  router.use(pageErrors);
  return router;
}

/** The list's public topics, offered on its hosted form. */
const formTopics = (list: Parameters<typeof topicsOf>[0]) => topicsOf(list).filter((t) => t.public);

/** One client may post the form only so often (before its body is read): the form cannot be driven as a relay. */
const formClientLimit: RequestHandler<{ key: string }> = async (req, _res, next) => {
  const reservation = await reserveFormPost(clientOf(req));
  if (!reservation.taken) throw new LimitReached('too many form posts from this address', reservation.retryAfterMs / 1000);
  next();
};

function linkProblem(state: 'used' | 'expired' | 'unknown'): [number, string] {
  if (state === 'used') return [410, html.usedLinkPage()];
  if (state === 'expired') return [410, html.expiredLinkPage()];
  return [404, html.unknownLinkPage()];
}

/** An HTML page with the security headers every public page carries. */
export function send(res: Response, status: number, page: string): void {
  res
    .status(status)
    .set({
      'Content-Type': 'text/html; charset=utf-8',
      'Cache-Control': 'no-store',
      // the token is in the address: never hand it to another site
      'Referrer-Policy': 'no-referrer',
      'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
    })
    .send(page);
}

/** Faults on these pages answer a page too, never JSON or a stack trace. */
export const pageErrors: ErrorRequestHandler = (err, req, res, _next) => {
  // the API's one error mapper decides status and headers (middleware/errors.ts refusalOf); the page says it plainly
  const { status, headers } = refusalOf(err, String(res.locals.requestId ?? ''), req);
  if (res.headersSent) return;
  res.set(headers);
  send(res, status, status === 429 ? html.tooManyPage() : status === 404 ? html.notFoundPage() : html.errorPage());
};
