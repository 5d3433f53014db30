/** Imported first by test/console/secure-cookies.test.ts, before the configuration is read: the console reached over https. */
process.env.PUBLIC_URL = 'https://mail.test';
