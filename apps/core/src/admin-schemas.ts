import { dbId, email, Joi } from './validate';
import { CAMPAIGN_STATUSES, GOALS } from './services/campaigns';

/** Inputs of the admin API (docs/operator.md), shared by the HTTP routes and the CLI. */
const id = dbId;
const name = () => Joi.string().trim().min(1).max(200);

export const accountInput = Joi.object({ name: name().required() });

export const mailboxInput = Joi.object({
  account: id().required(),
  address: email().required(),
  name: Joi.string().trim().max(200).allow(''),
  smtp: Joi.string().trim().max(2000).required(),
  daily_limit: Joi.number().integer().min(0).max(100_000),
  gap_seconds: Joi.number().integer().min(0).max(86_400),
  imap: Joi.string().trim().max(2000).allow(null, ''),
  max_per_second: Joi.number().integer().min(1).max(100_000).allow(null),
  dkim: dkimInput().allow(null),
  return_path: Joi.string().valid('address', 'verp'),
});

function dkimInput() {
  return Joi.object({
    domain: Joi.string().trim().hostname().max(253).required(),
    selector: Joi.string().trim().pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/).required(),
    private_key: Joi.string().trim().max(10_000).required(),
  });
}

export const mailboxChange = Joi.object({
  name: Joi.string().trim().max(200).allow(''),
  smtp: Joi.string().trim().max(2000),
  daily_limit: Joi.number().integer().min(0).max(100_000),
  gap_seconds: Joi.number().integer().min(0).max(86_400),
  imap: Joi.string().trim().max(2000).allow(null, ''),
  max_per_second: Joi.number().integer().min(1).max(100_000).allow(null),
  dkim: dkimInput().allow(null),
  return_path: Joi.string().valid('address', 'verp'),
}).min(1);

export const keyInput = Joi.object({
  account: id().required(),
  name: name().required(),
  mailbox: id().required(),
  daily_limit: Joi.number().integer().min(0).max(10_000_000).required(),
  prospects: Joi.boolean().default(false),
});

export const listChanges = Joi.object({ name: name(), confirm: Joi.boolean(), mailbox: id() }).min(1).messages({ 'object.min': 'nothing to change' });

export const subscribersQuery = Joi.object({
  status: Joi.string().valid('pending', 'active', 'unsubscribed', 'bounced', 'complained'),
  q: Joi.string().trim().min(1).max(254),
  after: id(),
  limit: Joi.number().integer().min(1).max(1000).default(100),
});

/** Keyset pages of an account's suppressions or stop list. */
export const entriesQuery = Joi.object({ account: id().required(), after: id(), limit: Joi.number().integer().min(1).max(1000).default(100) });

export const listInput = Joi.object({
  account: id().required(),
  name: name().required(),
  confirm: Joi.boolean().required(),
  mailbox: id().required(),
});

const step = Joi.object({
  subject: Joi.string().trim().min(1).max(300).required(),
  body: Joi.string().min(1).max(100_000).required(),
  delay_hours: Joi.number().min(0).max(24 * 365).required(),
});

const campaignFields = {
  name: name(),
  goal: Joi.string().valid(...GOALS),
  mailbox: id(),
  stages: Joi.array().items(Joi.string().trim().min(1).max(100)).max(50),
  status: Joi.string().valid(...CAMPAIGN_STATUSES),
  steps: Joi.array().items(step).min(1).max(20),
  /** links campaigns: the page the placed link must point to; null removes it */
  target: Joi.object({
    url: Joi.string().trim().max(2000).uri({ scheme: ['http', 'https'] }).required().messages({ 'string.uriCustomScheme': 'target.url must be an http or https URL' }),
    anchor: Joi.string().trim().max(500).allow(''),
  }).allow(null),
};

export const campaignInput = Joi.object({
  ...campaignFields,
  account: id().required(),
  name: name().required(),
  goal: campaignFields.goal.required(),
  mailbox: id().required(),
  steps: campaignFields.steps.required(),
});

export const campaignChanges = Joi.object(campaignFields).min(1).messages({ 'object.min': 'nothing to change' });

export const messagesQuery = Joi.object({
  to: Joi.string().trim().max(254),
  limit: Joi.number().integer().min(1).max(500).default(50),
  account: id(),
});

export const idParam = id().required().label('id');

/** The reads of one account's rows: `?account=<id>`. */
export const accountQuery = Joi.object({ account: id().required() });
