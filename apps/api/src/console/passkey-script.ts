import type { Request, Response } from 'express';
import { relyingParty, type RelyingParty } from '../../../core/src/second-factor';

/**
 * The console's one script: a passkey needs the browser's WebAuthn call (navigator.credentials), which no form can
 * make. A form with `data-passkey="register"` or `"authenticate"` and its options in `data-options` is sent with the
 * browser's answer as JSON in its `response` field. Served from /admin/static/passkeys.js; only the pages that carry
 * such a form allow scripts of the console's own origin (`allowScript`).
 */
export const PASSKEY_SCRIPT = `(function () {
  function buf(s) { s = s.replace(/-/g, '+').replace(/_/g, '/'); while (s.length % 4) s += '='; var b = atob(s), a = new Uint8Array(b.length); for (var i = 0; i < b.length; i++) a[i] = b.charCodeAt(i); return a.buffer; }
  function txt(buffer) { var a = new Uint8Array(buffer), s = ''; for (var i = 0; i < a.length; i++) s += String.fromCharCode(a[i]); return btoa(s).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, ''); }
  document.querySelectorAll('form[data-passkey]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var o = JSON.parse(form.getAttribute('data-options'));
      var status = form.querySelector('.passkey-status');
      o.challenge = buf(o.challenge);
      (o.excludeCredentials || []).concat(o.allowCredentials || []).forEach(function (c) { c.id = buf(c.id); });
      function send(c, response) {
        form.querySelector('input[name=response]').value = JSON.stringify({ id: c.id, rawId: txt(c.rawId), type: c.type, authenticatorAttachment: c.authenticatorAttachment || undefined, clientExtensionResults: c.getClientExtensionResults(), response: response });
        form.submit();
      }
      function fail(err) { if (status) status.textContent = 'The browser gave no passkey: ' + (err && err.message ? err.message : err); }
      if (form.getAttribute('data-passkey') === 'register') {
        o.user.id = buf(o.user.id);
        navigator.credentials.create({ publicKey: o }).then(function (c) {
          var r = c.response;
          send(c, { clientDataJSON: txt(r.clientDataJSON), attestationObject: txt(r.attestationObject), transports: r.getTransports ? r.getTransports() : [] });
        }, fail);
      } else {
        navigator.credentials.get({ publicKey: o }).then(function (c) {
          var r = c.response;
          send(c, { clientDataJSON: txt(r.clientDataJSON), authenticatorData: txt(r.authenticatorData), signature: txt(r.signature), userHandle: r.userHandle ? txt(r.userHandle) : undefined });
        }, fail);
      }
    });
  });
})();
`;

/** This answer may run the console's own scripts (the passkey forms): the console's policy plus `script-src 'self'`. */
export function allowScript(res: Response): void {
  const policy = String(res.getHeader('Content-Security-Policy') ?? "default-src 'none'");
  // once is enough: a page with a passkey form and a value to copy
  if (/(^|;)\s*script-src /.test(policy)) return;
  res.setHeader('Content-Security-Policy', `${policy.replace(/;?\s*$/, '')}; script-src 'self'`);
}

/** The relying party of this request (docs/teams.md), or the reason passkeys do not work on this host. */
export function relyingPartyOf(req: Request): RelyingParty | string {
  try {
    return relyingParty(req.hostname, `${req.protocol}://${req.get('host')}`);
  } catch (err) {
    return (err as Error).message;
  }
}
