import { rawQuery, type Tx } from '../db';

const domainOf = (email: string): string => email.slice(email.lastIndexOf('@') + 1);

/**
 * The stop list's repository and its rule, written once: the rule's SQL form, its code form and the one statement that
 * reads the table stand together here, so the forms cannot drift apart. An address is stopped when the account's stop
 * list holds the address itself (kind `email`) or its domain or any parent domain of it (kind `domain`: `example.com`
 * stops `a@example.com` and `a@news.example.com`). Every SQL that decides who may be written to uses this fragment (the
 * broadcasts and imports repositories, sending's send statement); `loadStopList` below applies the same rule in code to
 * a prospect's address and site, for the outreach requests that judge many at once (test/lists/stop-list-rule.test.ts
 * holds the two to one answer).
 *
 * `account` and `email` are SQL expressions (a column or a parameter such as `$1`) of the statement the fragment goes
 * into; they are placed as written, never built from input.
 */
export function stopListed(account: string, email: string): string {
  return `EXISTS (SELECT 1 FROM stop_list st WHERE st.account_id = ${account} AND (
    (st.kind = 'email' AND st.value = ${email})
    OR (st.kind = 'domain' AND (split_part(${email}, '@', 2) = st.value
                                OR right(split_part(${email}, '@', 2), length(st.value) + 1) = '.' || st.value))))`;
}

/** `mail.acme.co.uk` -> [mail.acme.co.uk, acme.co.uk, co.uk]: a stop-listed domain covers its subdomains too. */
function domainAndParents(host: string): string[] {
  const labels = host.split('.');
  const out: string[] = [];
  for (let i = 0; i < labels.length - 1; i++) out.push(labels.slice(i).join('.'));
  return out;
}

/** True when the address, its domain or the site (or a parent domain of either) is on the account's stop list. */
export async function isStopListed(db: Tx, accountId: number, contact: { email: string | null; site: string | null }): Promise<boolean> {
  return (await loadStopList(db, accountId, [contact])).covers(contact);
}

/** Reads the account's stop-list entries that are one of these addresses (kind `email`) or one of these domains (kind `domain`). */
async function entriesMatching(db: Tx, accountId: number, emails: string[], domains: string[]): Promise<{ kind: string; value: string }[]> {
  return rawQuery<{ kind: string; value: string }>(
    db,
    `SELECT kind::text AS kind, value FROM stop_list
     WHERE account_id = $1 AND ((kind = 'email' AND value = ANY($2::text[])) OR (kind = 'domain' AND value = ANY($3::text[])))`,
    [accountId, emails, domains],
  );
}

/** The account's stop-list entries that can touch these contacts, read once for a whole request (sending/write.ts applies the same rule in SQL). */
export async function loadStopList(db: Tx, accountId: number, contacts: { email: string | null; site: string | null }[]) {
  const domainsOf = (c: { email: string | null; site: string | null }) => [
    ...(c.email ? domainAndParents(domainOf(c.email)) : []),
    ...(c.site ? domainAndParents(c.site) : []),
  ];
  const emails = contacts.flatMap((c) => (c.email ? [c.email] : []));
  const domains = [...new Set(contacts.flatMap(domainsOf))];
  const entries = await entriesMatching(db, accountId, emails, domains);
  const stoppedEmails = new Set(entries.filter((e) => e.kind === 'email').map((e) => e.value));
  const stoppedDomains = new Set(entries.filter((e) => e.kind === 'domain').map((e) => e.value));
  return {
    covers: (c: { email: string | null; site: string | null }) =>
      (c.email !== null && stoppedEmails.has(c.email)) || domainsOf(c).some((d) => stoppedDomains.has(d)),
  };
}

/** Puts an address on the account's stop list (idempotent). */
export async function addToStopList(db: Tx, accountId: number, email: string): Promise<void> {
  await db.stopEntry.upsert({
    where: { accountId_value: { accountId, value: email } },
    create: { accountId, value: email, kind: 'email' },
    update: {},
  });
}
