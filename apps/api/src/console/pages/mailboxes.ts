import { mailboxInput } from '../../../../core/src/mailboxes/schema';
import { listAccounts } from '../../../../core/src/accounts';
import { createMailboxAudited, findMailbox, listMailboxes, mailboxView } from '../../../../core/src/mailboxes';
import { testMailbox } from '../../../../core/src/mailbox-settings/connection';
import { idParam, validate } from '../../../../core/src/validate';
import { auditContext, holdTo } from '../../middleware/audit';
import { ACCOUNT_SELECT, CSRF_FIELD } from '../views';
import { MAILBOX_PACING, mailboxPacingRoutes } from './outreach-settings';
import { narrow, viewScope, field, numberField, query, type ConsolePage } from '../page';
import { mailboxCharts } from '../stats-section';
import { mailboxOAuthRoutes, OAUTH_CONNECT_LINK, OAUTH_TEMPLATES, RECONNECT_BANNER } from './mailbox-oauth';

export const mailboxesPage: ConsolePage = {
  path: '/mailboxes',
  title: 'Mailboxes',
  templates: {
    mailboxes: `${RECONNECT_BANNER}<table><thead><tr><th>Id</th><th>Account</th><th>Address</th><th>SMTP</th><th>Daily limit</th><th>Gap (s)</th><th>Outreach today</th><th></th></tr></thead><tbody>
<% it.mailboxes.forEach(function (m) { %><tr><td><%= m.id %></td><td><%= m.account %></td><td><a href="/admin/mailboxes/<%= m.id %>"><%= m.address %></a><% if (m.auth.type === 'oauth2') { %> <span class="muted">OAuth2 · <%= m.auth.provider %></span><% } %><% if (m.status === 'needs_reconnect') { %> <strong class="error">needs reconnecting</strong><% } %></td><td><%= m.smtp.user %>@<%= m.smtp.host %>:<%= m.smtp.port %><%= m.smtp.secure ? ' (TLS)' : '' %><% if (m.smtp.tls === 'insecure') { %> <strong class="error">certificate not checked (tls=insecure)</strong><% } else if (m.smtp.tls === 'off') { %> <span class="muted">plain, no TLS (tls=off)</span><% } %></td><td><%= m.daily_limit %></td><td><%= m.gap_seconds %></td><td><%= m.effective_daily_limit %> (jitter <%= m.gap_jitter %><%= m.warmup ? ', warm-up ' + m.warmup.start + ' +' + m.warmup.step + '/day' : '' %>)</td><td><form method="post" action="/admin/mailboxes/<%= m.id %>/test" class="inline">${CSRF_FIELD}<button>Test SMTP</button></form><% if (m.imap) { %> <form method="post" action="/admin/mailboxes/<%= m.id %>/test-imap" class="inline">${CSRF_FIELD}<button>Test IMAP</button></form><% } %></td></tr><% }) %>
</tbody></table>
<form method="post" action="/admin/mailboxes" class="card">${CSRF_FIELD}
<h2>New mailbox</h2>
${ACCOUNT_SELECT}
<label>Address <input name="address" type="email" required></label>
<label>Name <input name="name" maxlength="200"></label>
<label>SMTP URL <input name="smtp" required placeholder="smtp://user:password@host:587" size="50"></label>
<p class="muted">Add <code>?tls=off</code> for plain SMTP to a local relay, <code>?tls=insecure</code> to accept a self-signed or expired certificate: then anyone between here and the server can read the mail and the password.</p>
<label>Daily limit <input name="daily_limit" type="number" min="0"></label>
<label>Gap between emails (seconds) <input name="gap_seconds" type="number" min="0"></label>
<button>Create mailbox</button>
</form>
${OAUTH_CONNECT_LINK}
${MAILBOX_PACING}`,
    ...OAUTH_TEMPLATES,
    mailbox: `<% if (it.mailbox.status === 'needs_reconnect') { %><div class="error banner" role="alert"><strong><%= it.mailbox.address %> needs reconnecting.</strong> <%= it.mailbox.auth.provider %> refused its sign-in<%= it.mailbox.disconnected ? ' (' + it.mailbox.disconnected.reason + ')' : '' %>. Its emails wait, none is lost.
<form method="post" action="/admin/mailboxes/<%= it.mailbox.id %>/reconnect" class="inline">${CSRF_FIELD}<button>Reconnect</button></form></div><% } %>
<p><a href="/admin/mailboxes">All mailboxes</a> · account <%= it.mailbox.account %> · <%= it.mailbox.name %></p>
<% if (it.mailbox.smtp.tls === 'insecure') { %><p class="error" role="alert">This mailbox's SMTP URL says <code>tls=insecure</code>: the server's certificate is not checked, so anyone between here and <%= it.mailbox.smtp.host %> can pose as it and read the mail<%= it.mailbox.smtp.user ? ' and the password' : '' %>. Give the server a valid certificate and drop <code>?tls=insecure</code>.</p><% } %>
<%~ it.charts %>`,
  },
  routes(router, ctx) {
    mailboxPacingRoutes(router, ctx);
    mailboxOAuthRoutes(router, ctx);
    router.get('/mailboxes', async (req, res) => {
      const account = query(req, 'account');
      const [mailboxes, accounts] = await Promise.all([listMailboxes(ctx.db, narrow(viewScope(res), account ? Number(account) || -1 : undefined)), listAccounts(ctx.db, viewScope(res))]);
      ctx.render(req, res, 'mailboxes', 'Mailboxes', { mailboxes, accounts, account });
    });
    router.get('/mailboxes/:id', async (req, res) => {
      const id = validate(idParam, req.params.id);
      const mailbox = mailboxView(await findMailbox(ctx.db, id));
      ctx.render(req, res, 'mailbox', `Mailbox ${mailbox.address}`, { mailbox, charts: await mailboxCharts(ctx.db, id, req.query) });
    });
    router.post('/mailboxes', async (req, res) => {
      const input = {
        account: numberField(req, 'account'),
        address: field(req, 'address'),
        name: field(req, 'name'),
        smtp: field(req, 'smtp'),
        ...(field(req, 'daily_limit') ? { daily_limit: numberField(req, 'daily_limit') } : {}),
        ...(field(req, 'gap_seconds') ? { gap_seconds: numberField(req, 'gap_seconds') } : {}),
      };
      const mailbox = await createMailboxAudited(ctx.db, validate(mailboxInput, input), auditContext(req, res, 'console'));
      await ctx.redirect(req, res, '/admin/mailboxes', `Mailbox ${mailbox.id} ${mailbox.address} created.`);
    });
    router.post('/mailboxes/:id/test', async (req, res) => {
      const id = validate(idParam, req.params.id);
      holdTo(req, res, (await findMailbox(ctx.db, id)).accountId);
      const { address, smtp } = await testMailbox(ctx.db, id, ['smtp']);
      await ctx.redirect(req, res, '/admin/mailboxes', `SMTP ${smtp!.ok ? 'works' : 'failed'} for ${address}: ${smtp!.message}`);
    });
    router.post('/mailboxes/:id/test-imap', async (req, res) => {
      const id = validate(idParam, req.params.id);
      holdTo(req, res, (await findMailbox(ctx.db, id)).accountId);
      const { address, imap } = await testMailbox(ctx.db, id, ['imap']);
      const flash = imap ? `IMAP ${imap.ok ? 'works' : 'failed'} for ${address}: ${imap.message}` : `${address} has no imap settings.`;
      await ctx.redirect(req, res, '/admin/mailboxes', flash);
    });
  },
};
