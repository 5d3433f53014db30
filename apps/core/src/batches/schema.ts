import { sendSchema } from '../sending/schema';
import { Joi } from '../validate';

/** docs/api.md: the most messages one POST /api/v1/send/batch takes. */
export const BATCH_LIMIT = 100;

/** A message of a batch: a send body as POST /api/v1/send takes it, and its own Idempotency-Key if the caller wants one. */
export const batchMessageSchema = sendSchema.keys({
  idempotency_key: Joi.string()
    .pattern(/^[\x20-\x7e]{1,200}$/, 'printable ASCII')
    .max(200)
    .description("this message's own Idempotency-Key (1 to 200 printable ASCII characters): the same key and message within 24 h, in a batch or on POST /send, is answered again and sent once"),
});

/**
 * The batch itself: `messages`, 1 to BATCH_LIMIT of them. Each message is checked alone by acceptBatch (a bad one is
 * named in its result and does not refuse the others), so the batch's own rule takes any value there; the document
 * shows batchMessageSchema (apps/api/src/openapi/document.ts).
 */
export const batchSchema = Joi.object({
  messages: Joi.array()
    .items(Joi.any())
    .min(1)
    .max(BATCH_LIMIT)
    .required()
    .messages({ 'array.max': `at most ${BATCH_LIMIT} messages per batch`, 'array.min': 'give at least one message' }),
})
  .required()
  .messages({ 'object.base': 'the body must be a JSON object' });

/** The batch as the OpenAPI document shows it: each message a send body. */
export const batchDocumentSchema = Joi.object({
  messages: Joi.array().items(batchMessageSchema).min(1).max(BATCH_LIMIT).required(),
}).required();
