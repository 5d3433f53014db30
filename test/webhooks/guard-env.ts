/** Imported first by test/webhooks/guard.test.ts, before the configuration is read: webhooks as a default install has them. */
process.env.WEBHOOK_ALLOW_PRIVATE = 'false';
