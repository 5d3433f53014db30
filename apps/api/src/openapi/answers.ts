import { Joi } from '../../../core/src/validate';
import { VERIFY_RESULTS } from '../../../core/src/verify';

/**
 * The answers of the public API as joi schemas: documentation only (the routes build their answers from typed core
 * views), converted to JSON Schema the same way as the request schemas. test/helpers/openapi.ts checks every answer the
 * test suite receives against them, so a field added to a view without being added here fails the suite.
 */
const MESSAGE_STATUSES = ['queued', 'sending', 'sent', 'deferred', 'failed', 'bounced', 'cancelled'];
const PROSPECT_STATUSES = ['new', 'ready', 'writing', 'hold', 'later', 'replied', 'agreed', 'placed', 'lost'];
const isoOrNull = () => Joi.string().isoDate().allow(null).required();

export const refusal = Joi.object({
  ok: Joi.valid(false).required(),
  error: Joi.string().required().description('what was wrong, in words'),
}).label('Refusal');

/** What a bounce said about a message (docs/inbound.md, "Bounce reasons"). */
export const bounceAnswer = Joi.object({
  reason: Joi.string().required().description('userunknown, mailboxfull, blocked... as sisimai names them'),
  class: Joi.string().valid('dead', 'mailbox', 'not_address').required(),
  status: Joi.string().allow(null).required().description('enhanced status code, 5.1.1'),
  smtp_code: Joi.string().allow(null).required().description('SMTP reply code, 550'),
  diagnostic: Joi.string().allow('').required(),
  dead: Joi.boolean().required().description('the address is dead: suppressed at once'),
}).label('Bounce');

const sendFields = {
  id: Joi.string().required(),
  status: Joi.string().required().description('the send as a whole: the least advanced status of its messages (cancelled when all were withdrawn)'),
  messages: Joi.array()
    .items(
      Joi.object({
        id: Joi.string().required(),
        to: Joi.string().required(),
        status: Joi.string().valid(...MESSAGE_STATUSES).required(),
        message_id: Joi.string().description('GET only: the Message-ID header the copy goes out with, `<id@domain>`'),
        bounce: bounceAnswer.description('GET only, when a bounce came: what it said (docs/inbound.md)'),
      }),
    )
    .required(),
  skipped: Joi.array()
    .items(Joi.object({ to: Joi.string().required(), reason: Joi.string().valid('bounced', 'complained', 'stopped').required() }))
    .required(),
  send_at: Joi.string().isoDate().allow(null).description('GET only: when the send goes out; null: as soon as it can'),
};

export const sendAnswer = Joi.object({ ok: Joi.valid(true).required(), ...sendFields }).label('SendAnswer');

/** POST /send/batch: one result per message, in order: its send as POST /send answers it, or its refusal. */
export const batchAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  results: Joi.array()
    .items(
      Joi.alternatives().try(
        Joi.object({ ok: Joi.valid(true).required(), id: sendFields.id, status: sendFields.status, messages: sendFields.messages, skipped: sendFields.skipped }),
        Joi.object({ ok: Joi.valid(false).required(), error: Joi.string().required().description("why this message was refused (the others were not)") }),
      ),
    )
    .required(),
}).label('BatchAnswer');

/** The answer of a cancel or a reschedule: the send as GET shows it. */
export const sendChangeAnswer = Joi.object({ ok: Joi.valid(true).required(), send: Joi.object(sendFields).required() }).label('SendChangeAnswer');

export const listsAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  lists: Joi.array()
    .items(
      Joi.object({
        key: Joi.string().required(),
        name: Joi.string().allow('').required(),
        confirm: Joi.boolean().required(),
        subscribers: Joi.number().integer().min(0).required(),
        public: Joi.boolean().required().description('a public list has an archive page and feed (docs/preferences.md)'),
        preferences_url: Joi.string().required().description('the preference centre\'s "send me my link" page'),
        archive_url: Joi.string().allow(null).required().description("the archive page; null for a private list"),
      }),
    )
    .required(),
}).label('ListsAnswer');

export const templatesAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  templates: Joi.array()
    .items(
      Joi.object({
        id: Joi.number().integer().required(),
        account: Joi.number().integer().required(),
        name: Joi.string().required(),
        alias: Joi.string().allow(null).required(),
        kind: Joi.string().valid('template', 'layout').required(),
        subject: Joi.string().allow('').required(),
        html: Joi.string().allow('', null).required(),
        text: Joi.string().allow('', null).required(),
        layout: Joi.number().integer().allow(null).required(),
        required: Joi.array().items(Joi.string()).required(),
        inline_css: Joi.boolean().required(),
        text_from_html: Joi.boolean().required(),
        version: Joi.number().integer().min(1).required(),
        created_at: Joi.string().isoDate().required(),
        updated_at: Joi.string().isoDate().required(),
      }),
    )
    .required(),
}).label('TemplatesAnswer');

/** docs/verification.md: the result kept on a subscriber or prospect */
const keptVerification = () =>
  Joi.object({ result: Joi.string().valid(...VERIFY_RESULTS).required(), checked_at: Joi.string().isoDate().required() }).description('the last address verification (docs/verification.md)');

/** docs/verification.md: one address's verification */
const verification = Joi.object({
  email: Joi.string().allow('').required(),
  result: Joi.string().valid(...VERIFY_RESULTS).required(),
  reasons: Joi.array().items(Joi.string()).required(),
  checks: Joi.object({
    syntax: Joi.boolean().required(),
    domain: Joi.string().allow('').required(),
    mx: Joi.string().valid('mx', 'a', 'null_mx', 'none', 'timeout', '').required(),
    disposable: Joi.boolean().required(),
    role: Joi.boolean().required(),
    free: Joi.boolean().required(),
    suppressed: Joi.boolean().required(),
    history: Joi.string().valid('none', 'soft_bounce', 'hard_bounce').required(),
    mailbox: Joi.string().valid('accepted', 'rejected', 'unknown'),
    catch_all: Joi.boolean(),
  }).required(),
});

export const verifyAnswer = verification.keys({ ok: Joi.valid(true).required() }).label('VerifyAnswer');
export const verifyManyAnswer = Joi.object({ ok: Joi.valid(true).required(), results: Joi.array().items(verification).required() }).label('VerifyManyAnswer');

export const subscribeAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  status: Joi.string().valid('pending', 'active', 'exists', 'gone', 'suppressed', 'undeliverable').required(),
  verification: verification.description('with `verify`: the address\'s verification'),
}).label('SubscribeAnswer');

export const unsubscribeAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  status: Joi.string().valid('unsubscribed', 'gone', 'absent').required(),
}).label('UnsubscribeAnswer');

export const campaignsAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  campaigns: Joi.array()
    .items(
      Joi.object({
        id: Joi.number().integer().required(),
        name: Joi.string().allow('').required(),
        goal: Joi.string().required(),
        status: Joi.string().valid('draft', 'running', 'paused').required(),
        prospects: Joi.number().integer().min(0).required(),
        stages: Joi.array().items(Joi.string().allow('')).required(),
      }),
    )
    .required(),
}).label('CampaignsAnswer');

const prospect = Joi.object({
  id: Joi.number().integer().required(),
  email: Joi.string().allow('').required(),
  name: Joi.string().allow('').required(),
  site: Joi.string().allow('').required(),
  status: Joi.string().valid(...PROSPECT_STATUSES).required(),
  reason: Joi.string().allow('').required(),
  step: Joi.number().integer().min(0).required(),
  /** where it is in the sequence (docs/outreach.md, branches): the id of the step it waits at, "$end" past its path's last */
  at: Joi.string().allow(null).required(),
  stage: Joi.number().integer().min(0).required(),
  stage_name: Joi.string().allow('').required(),
  value: Joi.number().required(),
  reply: Joi.string().allow('').required(),
  replied_at: isoOrNull(),
  next_at: isoOrNull(),
  closed_at: isoOrNull(),
  /** links campaigns: the page given with `url` and the last check's findings (docs/links.md) */
  link: Joi.object({
    url: Joi.string().required(),
    found: Joi.boolean().required(),
    href: Joi.string().allow('').required(),
    anchor: Joi.string().allow('').required(),
    rel: Joi.string().allow('').required(),
    error: Joi.string().allow('').required(),
    checked_at: isoOrNull(),
  })
    .allow(null)
    .required(),
  verification: keptVerification().allow(null).required(),
});

export const prospectAnswer = Joi.object({ ok: Joi.valid(true).required(), prospect: prospect.required() }).label('ProspectAnswer');

const count = () => Joi.number().integer().min(0).required();
export const addProspectsAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  campaign: Joi.number().integer().required(),
  added: count(),
  updated: count(),
  same: count(),
  stopped: count(),
  invalid: count(),
  prospects: Joi.array()
    .items(
      Joi.object({
        contact: Joi.string().allow('').required(),
        result: Joi.string().valid('added', 'updated', 'same', 'stopped', 'invalid').required(),
        id: Joi.number().integer().allow(null).required(),
        error: Joi.string().description('why the item is invalid'),
        verification: keptVerification().allow(null),
      }),
    )
    .required(),
}).label('AddProspectsAnswer');

/** GET /inbound (docs/inbound-events.md): received emails, oldest first, and the id to read after next (null: the last page). */
const imapInboundAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  messages: Joi.array()
    .items(
      Joi.object({
        id: Joi.number().integer().required(),
        mailbox: Joi.number().integer().required(),
        kind: Joi.string().valid('reply', 'auto_reply', 'other').required(),
        from: Joi.string().allow('').required(),
        to: Joi.string().allow('').required(),
        subject: Joi.string().allow('').required(),
        text: Joi.string().allow('', null).required(),
        html: Joi.string().allow('', null).required(),
        attachments: Joi.array()
          .items(
            Joi.object({
              filename: Joi.string().allow('').required(),
              content_type: Joi.string().required(),
              size: Joi.number().integer().min(0).required(),
              url: Joi.string().allow(null).required().description('signed, expires in a day; null when kept as metadata only (over the size cap)'),
            }),
          )
          .required(),
        in_reply_to: Joi.object({
          message: Joi.string(),
          send: Joi.string(),
          prospect: Joi.number().integer(),
          campaign: Joi.number().integer(),
        }).required(),
        invalid: Joi.boolean().required(),
        received_at: Joi.string().isoDate().required(),
      }),
    )
    .required(),
  next: Joi.number().integer().allow(null).required(),
});

const address = Joi.string().allow('');
/** GET /inbound?source=mx (docs/mx.md): the MX's delivered messages, each as its inbound.received event's data. */
const mxInboundAnswer = Joi.object({
  ok: Joi.valid(true).required(),
  messages: Joi.array()
    .items(
      Joi.object({
        id: Joi.string().guid().required(),
        route: Joi.number().integer().allow(null).required(),
        domain: Joi.string().required(),
        hash: Joi.string().allow(null, '').required().description('the part after + in the local part (Postmark\'s MailboxHash)'),
        envelope: Joi.object({ from: address.required(), to: Joi.array().items(Joi.string()).required() }).required(),
        from: address.required(),
        to: Joi.array().items(Joi.string()).required(),
        cc: Joi.array().items(Joi.string()).required(),
        subject: Joi.string().allow('').required(),
        text: Joi.string().allow('', null).required(),
        html: Joi.string().allow('', null).required(),
        reply_text: Joi.string().allow('', null).required().description('the new text without the quoted history and signature'),
        attachments: Joi.array()
          .items(Joi.object({ filename: Joi.string().allow('').required(), content_type: Joi.string().required(), size: Joi.number().integer().min(0).required(), url: Joi.string().required() }))
          .required(),
        headers: Joi.array().items(Joi.object({ name: Joi.string().required(), value: Joi.string().allow('').required() })).required(),
        auth: Joi.object().unknown(true).required().description('{spf: {result}, dkim: [{domain, selector, result}], dmarc: {result, policy}, arc: {result}}'),
        spam: Joi.object({ score: Joi.number().required(), symbols: Joi.array().items(Joi.string()).required() }),
        raw_url: Joi.string().required(),
        received_at: Joi.string().isoDate().required(),
      }),
    )
    .required(),
  next: Joi.string().guid().allow(null).required(),
});

export const inboundAnswer = Joi.alternatives().try(imapInboundAnswer, mxInboundAnswer).label('InboundAnswer');
