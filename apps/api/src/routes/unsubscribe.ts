import { Router, type RequestHandler } from 'express';
import { inspectUnsubscribeLink, unsubscribeByToken } from '../../../core/src/broadcasts/unsubscribe';
import type { Db } from '../../../core/src/db';
import { inspectProspectLink, isProspectToken, optOutByToken } from '../../../core/src/outreach/opt-out';
import { LimitReached } from '../../../core/src/errors';
import { reserveUnsubscribePost } from '../../../core/src/subscribers/limit';
import { addressOf, clientOf } from '../middleware/client';
import { methodNotAllowed } from '../middleware/errors';
import * as html from '../../../core/src/subscribers/html';
import { pageErrors, send } from './pages';
import { inspectTopicLink, leaveTopicsByToken } from '../../../core/src/preferences/service';
import * as topicPage from '../../../core/src/preferences/html';

/**
 * PUBLIC_URL/u/<token>, the List-Unsubscribe link of broadcast copies and outreach steps (`p<id>.<mac>`; RFC 8058): POST (the mail client's one-click
 * body `List-Unsubscribe=One-Click`, or the page's button) unsubscribes at once and answers 200, no redirect; GET shows
 * the button and changes nothing. The POST reads no body: the answer never waits for one, so strangers trickling bodies
 * hold nothing a mailbox provider's post needs (what they send is read and dropped after the answer: unread-body.ts).
 */
export function unsubscribeRouter(db: Db): Router {
  const router = Router();

  router
    .route('/u/:token')
    .get(async (req, res) => {
      if (isProspectToken(req.params.token)) {
        const optOut = await inspectProspectLink(db, req.params.token);
        if (!optOut) return send(res, 404, html.unknownUnsubscribeLinkPage());
        return send(res, 200, optOut.done ? html.unsubscribedPage(optOut.sender) : html.unsubscribePage(optOut.sender));
      }
      const link = await inspectUnsubscribeLink(db, req.params.token);
      if (link.listName === null) return send(res, 404, html.unknownUnsubscribeLinkPage());
      send(res, 200, link.status === 'active' || link.status === 'pending' ? html.unsubscribePage(link.listName) : html.unsubscribedPage(link.listName));
    })
    // any body (or none) unsubscribes: RFC 8058 clients send `List-Unsubscribe=One-Click`, and a person pressing the button is as clear
    .post(postRate, async (req, res) => {
      if (isProspectToken(req.params.token)) {
        const optOut = await optOutByToken(db, req.params.token);
        if (!optOut) return send(res, 404, html.unknownUnsubscribeLinkPage());
        return send(res, 200, html.unsubscribedPage(optOut.sender));
      }
      const done = await unsubscribeByToken(db, req.params.token, { source: 'one_click', ip: addressOf(req) });
      if (!done) return send(res, 404, html.unknownUnsubscribeLinkPage());
      send(res, 200, html.unsubscribedPage(done.listName));
    })
    .all(methodNotAllowed);

  // an email of topics names this one (templates/list-copy.ts renderCopy): one-click leaves those topics, not the list
  router
    .route('/u/:token/t/:topics')
    .get(async (req, res) => {
      const link = await inspectTopicLink(db, req.params.token, req.params.topics.split(','));
      if (!link) return send(res, 404, html.unknownUnsubscribeLinkPage());
      send(res, 200, topicPage.topicUnsubscribePage(link.listName, link.topics));
    })
    .post(postRate, async (req, res) => {
      const done = await leaveTopicsByToken(db, req.params.token, req.params.topics.split(','), { source: 'one_click', ip: addressOf(req) });
      if (!done) return send(res, 404, html.unknownUnsubscribeLinkPage());
      send(res, 200, topicPage.topicLeftPage(done.listName, done.topics));
    })
    .all(methodNotAllowed);

  router.use(pageErrors);
  return router;
}

/** One client (an IPv4 address, an IPv6 /64) may post only so often: a flood costs the database a bounded rate. */
const postRate: RequestHandler = async (req, _res, next) => {
  const reservation = await reserveUnsubscribePost(clientOf(req));
  if (!reservation.taken) throw new LimitReached('too many unsubscribe posts from this address', reservation.retryAfterMs / 1000);
  next();
};
