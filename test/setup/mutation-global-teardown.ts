/** Stryker's jest runs keep their template database for the next mutant (mutation-global-setup.ts); each test file drops its own. */
export default async function mutationGlobalTeardown(): Promise<void> {}
