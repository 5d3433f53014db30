import { Joi } from '../validate';
import { VERIFY_MODES } from '.';

/** docs/verification.md: at most this many addresses a request; a malformed one is answered undeliverable, never refused. */
export const MAX_VERIFY_PER_REQUEST = 100;

const address = () => Joi.string().allow('').max(2000);

export const verifyRequest = Joi.object<{ emails: string[] }>({
  emails: Joi.array()
    .items(address())
    .min(1)
    .max(MAX_VERIFY_PER_REQUEST)
    .required()
    .messages({ 'array.max': `at most ${MAX_VERIFY_PER_REQUEST} addresses per request` }),
});

export const verifyQuery = Joi.object<{ email: string }>({ email: address().required() });

/** The `verify` field of an add or an import. */
export const verifyMode = () => Joi.string().valid(...VERIFY_MODES);
