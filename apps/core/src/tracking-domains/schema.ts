import { dbId, Joi } from '../validate';

/** Inputs of the admin API's tracking-domain routes (docs/tracking-domains.md), shared by the routes, the console and the CLI. */
export const trackingDomainInput = Joi.object({
  account: dbId().required(),
  // checked as a domain name by domainName (domains/names.ts), which says what is wrong
  name: Joi.string().max(300).required(),
});

/** `account` narrows a listing, and on one domain's routes makes another account's domain answer 404. */
export const trackingDomainsQuery = Joi.object({ account: dbId() });
