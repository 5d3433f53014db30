import { accountInput } from '../../../../core/src/accounts/schema';
import { createAccountAudited, listAccounts } from '../../../../core/src/accounts';
import { validate } from '../../../../core/src/validate';
import { auditContext } from '../../middleware/audit';
import { CSRF_FIELD } from '../views';
import { viewScope, field, type ConsolePage } from '../page';

export const accountsPage: ConsolePage = {
  path: '/accounts',
  title: 'Accounts',
  templates: {
    accounts: `<table><thead><tr><th>Id</th><th>Name</th><th></th></tr></thead><tbody>
<% it.accounts.forEach(function (a) { %><tr><td><%= a.id %></td><td><%= a.name %></td><td><a href="/admin/mailboxes?account=<%= a.id %>">mailboxes</a> · <a href="/admin/keys?account=<%= a.id %>">keys</a></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/accounts" class="card">${CSRF_FIELD}
<h2>New account</h2>
<label>Name <input name="name" required maxlength="200"></label>
<button>Create account</button>
</form>`,
  },
  routes(router, ctx) {
    router.get('/accounts', async (req, res) => {
      ctx.render(req, res, 'accounts', 'Accounts', { accounts: await listAccounts(ctx.db, viewScope(res)) });
    });
    router.post('/accounts', async (req, res) => {
      const account = await createAccountAudited(ctx.db, validate(accountInput, { name: field(req, 'name') }), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/accounts', `Account ${account.id} "${account.name}" created.`);
    });
  },
};
