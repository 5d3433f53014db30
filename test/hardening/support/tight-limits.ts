/**
 * Imported first by test/hardening/strangers.test.ts, before the configuration is read: the smallest body budget the
 * configuration allows (so one stranger's reservation would starve everybody) and a low failure allowance.
 */
process.env.MAX_BODY_BYTES_IN_FLIGHT = String(1024 * 1024);
process.env.AUTH_FAILURES_PER_MINUTE = '5';
