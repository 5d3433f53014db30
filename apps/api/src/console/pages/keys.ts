import { keyInput } from '../../../../core/src/auth/schema';
import { listAccounts } from '../../../../core/src/accounts';
import { createKeyAudited, listKeys, revokeKeyEverywhere, SCOPES } from '../../../../core/src/auth/keys';
import { listMailboxes } from '../../../../core/src/mailboxes';
import { idParam, validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { ACCOUNT_SELECT, CSRF_FIELD, mailboxSelect } from '../views';
import { narrow, viewScope, field, numberField, query, type ConsolePage } from '../page';

/** A form's repeated field (checkboxes) as a list of strings. */
function list(req: Parameters<typeof field>[0], name: string): string[] {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? [value] : [];
}

export const keysPage: ConsolePage = {
  path: '/keys',
  title: 'API keys',
  templates: {
    keys: `<% if (it.token) { %><section class="card"><h2>New key <%= it.created.name %></h2>
<p>Copy it now: this is the only time it is shown.</p><p class="token" id="new-token"><%= it.token %></p></section><% } %>
<table><thead><tr><th>Id</th><th>Account</th><th>Name</th><th>Key</th><th>Mailbox</th><th>Daily limit</th><th>Prospects</th><th>Scopes</th><th>Domains</th><th>Expires</th><th>Last used</th><th>State</th></tr></thead><tbody>
<% it.keys.forEach(function (k) { %><tr><td><%= k.id %></td><td><%= k.account %></td><td><%= k.name %></td><td><code><%= k.hint %></code></td><td><%= k.mailbox %></td><td><%= k.daily_limit %></td><td><%= k.prospects ? 'yes' : 'no' %></td><td><%= k.scopes.join(' ') %></td><td><%= k.domains.join(' ') || 'any' %></td><td><%= k.expires_at || 'never' %></td><td><%= k.last_used_at || '-' %></td>
<td><% if (k.revoked_at) { %>revoked <%= k.revoked_at %><% } else { %><form method="post" action="/admin/keys/<%= k.id %>/revoke" class="inline">${CSRF_FIELD}<button>Revoke</button></form><% } %></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/keys" class="card">${CSRF_FIELD}
<h2>New key</h2>
${ACCOUNT_SELECT}
<label>Name <input name="name" required maxlength="200"></label>
${mailboxSelect('Mailbox')}
<label>Daily limit <input name="daily_limit" type="number" min="0" value="1000" required></label>
<label><input type="checkbox" name="prospects" value="yes"> May add prospects to campaigns</label>
<input type="hidden" name="scopes_shown" value="1"><fieldset><legend>Scopes</legend>${SCOPES.map((s) => `<label><input type="checkbox" name="scopes" value="${s}" checked> ${s}</label>`).join(' ')}</fieldset>
<label>From domains (space-separated; empty: any) <input name="domains" maxlength="2000"></label>
<label>Expires at (UTC, empty: never) <input name="expires_at" type="datetime-local"></label>
<button>Create key</button>
</form>`,
  },
  routes(router, ctx) {
    const show = async (req: Parameters<typeof ctx.render>[0], res: Parameters<typeof ctx.render>[1], extra: Record<string, unknown> = {}, status?: number) => {
      const account = query(req, 'account');
      const [keys, accounts, mailboxes] = await Promise.all([listKeys(ctx.db, narrow(viewScope(res), account ? Number(account) || -1 : undefined)), listAccounts(ctx.db, viewScope(res)), listMailboxes(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'keys', 'API keys', { keys, accounts, mailboxes, ...extra }, status);
    };
    router.get('/keys', (req, res) => show(req, res));
    router.post('/keys', async (req, res) => {
      const input = validate(keyInput, {
        account: numberField(req, 'account'),
        name: field(req, 'name'),
        mailbox: numberField(req, 'mailbox'),
        daily_limit: numberField(req, 'daily_limit'),
        prospects: field(req, 'prospects') === 'yes',
        // a form of before the scopes (no boxes shown) keeps them all; boxes shown and none ticked is refused
        scopes: field(req, 'scopes_shown') ? list(req, 'scopes') : undefined,
        domains: field(req, 'domains') ? field(req, 'domains').split(/[\s,]+/).filter(Boolean) : undefined,
        expires_at: field(req, 'expires_at') ? `${field(req, 'expires_at')}Z` : undefined,
      });
      const { key, token } = await createKeyAudited(ctx.db, input, auditContext(req, res, 'console'));
      // shown in this answer only (no redirect): the token is never stored and cannot be shown again
      res.set('Cache-Control', 'no-store');
      await show(req, res, { token, created: key }, 201);
    });
    router.post('/keys/:id/revoke', async (req, res) => {
      const key = await revokeKeyEverywhere(ctx.db, validate(idParam, req.params.id), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/keys', `Key ${key.id} "${key.name}" revoked.`);
    });
  },
};
