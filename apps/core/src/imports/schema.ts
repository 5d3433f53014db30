import { Joi } from '../validate';
import { verifyMode } from '../verify/schema';
import { IMPORT_STATUSES } from './parse';

/** `?status=active`: the status of an import's lines that name none (otherwise the list decides: active, or pending with double opt-in). */
export const importQuery = Joi.object({ status: Joi.string().valid(...IMPORT_STATUSES), verify: verifyMode() });
