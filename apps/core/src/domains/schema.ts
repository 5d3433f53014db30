import { dbId, Joi } from '../validate';

/** Inputs of the admin API's domain routes (docs/domains.md), shared by the routes, the console, the CLI and the document. */
export const domainInput = Joi.object({
  account: dbId().required(),
  // checked as a domain name by domainName (names.ts), which says what is wrong
  name: Joi.string().max(300).required(),
});

/** `account` narrows a listing, and on one domain's routes makes another account's domain answer 404. */
export const domainsQuery = Joi.object({ account: dbId() });
