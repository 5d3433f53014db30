import type * as AcmeClient from 'acme-client';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { config } from '../config';
import { decryptSecret, encryptSecret } from '../crypto';
import type { Db } from '../db';
import { lazy } from '../lazy';

/** acme-client and what it pulls in (about 27 MB of RSS) are loaded by the first order, not by every worker and API. */
const acme = lazy((): typeof AcmeClient => require('acme-client'));

/** The ACME server did not answer, or the order failed: tried again with backoff (the reason says which). */
export class AcmeFailure extends Error {}

/** Network failures: the ACME server is down or unreachable, as opposed to one that answered with a problem. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

export interface IssuedCertificate {
  /** the chain, leaf first (PEM) */
  certificatePem: string;
  privateKeyPem: string;
  notAfter: Date;
}

/**
 * acme-client speaks through one HTTP client of its own: it is given our settings before each use (the CA file
 * trusted for the directory's HTTPS, a timeout), and no retries of its own: a failed order is retried by the schedule,
 * with backoff, and its status says so.
 */
function configureLibrary(): void {
  const { acmeCaFile } = config().tracking;
  acme().axios.defaults.httpsAgent = acmeCaFile ? new https.Agent({ ca: fs.readFileSync(acmeCaFile, 'utf8') }) : undefined;
  acme().axios.defaults.timeout = 15_000;
  (acme().axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number } }).acmeSettings.retryMaxAttempts = 0;
}

function failure(err: unknown): AcmeFailure {
  const e = err as { code?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (code && UNREACHABLE.has(code)) return new AcmeFailure(`the ACME server did not answer (${code})`);
  return new AcmeFailure(`the ACME order failed: ${e.message ?? String(err)}`);
}

/** GET of the ACME directory with the agent acme-client uses; a network failure is an AcmeFailure naming its code. */
function readDirectory(): Promise<{ meta?: { caaIdentities?: string[] } }> {
  const directoryUrl = config().tracking.acmeDirectoryUrl;
  const get = directoryUrl.startsWith('https:') ? https.get : http.get;
  return new Promise((resolve, reject) => {
    const req = get(directoryUrl, { agent: acme().axios.defaults.httpsAgent as https.Agent | undefined, timeout: 15_000 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new AcmeFailure(`the ACME directory answered ${res.statusCode}`));
        try {
          resolve(JSON.parse(body) as { meta?: { caaIdentities?: string[] } });
        } catch {
          reject(new AcmeFailure('the ACME directory answered something that is not JSON'));
        }
      });
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', (err) => reject(failure(err)));
  });
}

/** The CA's CAA identities: ACME_CAA_IDENTITIES, else what its directory says (`meta.caaIdentities`). */
export async function caaIdentities(): Promise<string[]> {
  const { acmeCaaIdentities } = config().tracking;
  if (acmeCaaIdentities.length) return acmeCaaIdentities;
  configureLibrary();
  return ((await readDirectory()).meta?.caaIdentities ?? []).map((s) => s.toLowerCase());
}

/** The service's account at the directory: its key made (and kept, sealed) at the first order; its URL noted. */
async function accountClient(db: Db): Promise<{ client: AcmeClient.Client; known: boolean }> {
  const directoryUrl = config().tracking.acmeDirectoryUrl;
  const key = config().secretKey;
  let account = await db.acmeAccount.findUnique({ where: { directoryUrl } });
  if (!account) {
    const accountKey = (await acme().crypto.createPrivateEcdsaKey()).toString();
    // two workers making one at once: the first's stays
    await db.acmeAccount.createMany({ data: [{ directoryUrl, accountKeyEnc: encryptSecret(accountKey, key) }], skipDuplicates: true });
    account = await db.acmeAccount.findUniqueOrThrow({ where: { directoryUrl } });
  }
  const client = new (acme().Client)({
    directoryUrl,
    accountKey: decryptSecret(account.accountKeyEnc, key),
    backoffAttempts: 10,
    backoffMin: 500,
    backoffMax: 5_000,
  });
  // the key's account is looked up at every order (one request), and made when the CA does not know it: a CA that lost
  // or reset its accounts (a staging reset, a new test server) gets it made again rather than failing every order
  const email = config().tracking.acmeEmail;
  try {
    await client.createAccount({ onlyReturnExisting: true });
  } catch {
    await client.createAccount({ termsOfServiceAgreed: true, ...(email ? { contact: [`mailto:${email}`] } : {}) });
  }
  return { client, known: account.accountUrl === client.getAccountUrl() };
}

/**
 * Orders a certificate for `name` from ACME_DIRECTORY_URL with HTTP-01: the key authorization is written to
 * acme_challenges, where any API process answers the CA's request for it, and removed afterwards.
 */
export async function orderCertificate(db: Db, name: string): Promise<IssuedCertificate> {
  configureLibrary();
  // is it up? (acme-client turns a refused connection into a TypeError once it stops retrying: the reason would be lost)
  await readDirectory();
  try {
    const { client, known } = await accountClient(db);
    const privateKey = await acme().crypto.createPrivateEcdsaKey();
    const [, csr] = await acme().crypto.createCsr({ commonName: name, altNames: [name] }, privateKey);
    const chain = await client.auto({
      csr,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      // acme-client's own check asks port 80 of the name; the CA's check is the one that counts
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        await db.acmeChallenge.upsert({ where: { token: challenge.token }, create: { token: challenge.token, keyAuthorization }, update: { keyAuthorization } });
      },
      challengeRemoveFn: async (_authz, challenge) => {
        await db.acmeChallenge.deleteMany({ where: { token: challenge.token } });
      },
    });
    if (!known) await db.acmeAccount.update({ where: { directoryUrl: config().tracking.acmeDirectoryUrl }, data: { accountUrl: client.getAccountUrl() } });
    const leaf = new X509Certificate(chain);
    return { certificatePem: chain, privateKeyPem: privateKey.toString(), notAfter: new Date(leaf.validTo) };
  } catch (err) {
    throw failure(err);
  }
}
