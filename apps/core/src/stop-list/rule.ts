/**
 * The stop-list rule, written once: an address is stopped when the account's stop list holds the address itself
 * (kind `email`) or its domain or any parent domain of it (kind `domain`: `example.com` stops `a@example.com` and
 * `a@news.example.com`). Every SQL that decides who may be written to uses this fragment (broadcasts/run.ts,
 * sending/write.ts, imports/run.ts); outreach/contacts.ts applies the same rule in code to a prospect's address and site.
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
