import { escapeHtml } from './html';

export interface ConfirmationEmail {
  subject: string;
  text: string;
  html: string;
}

/** A name fit for the greeting: short, one line, letters only (no links, no addresses, no punctuation to build them). */
const PLAIN_NAME = /^[\p{L}\p{M}' -]{1,40}$/u;

/**
 * The double opt-in email: the list's name, the link and what happens when it is ignored. The name (typed by whoever
 * typed the address) greets only when it is a plain short name: the form cannot carry a message to any address.
 */
export function renderConfirmationEmail(input: { listName: string; name: string; link: string }): ConfirmationEmail {
  const name = input.name.trim();
  const greeting = PLAIN_NAME.test(name) ? `Hello ${name},` : 'Hello,';
  const subject = `Confirm your subscription to ${input.listName}`.replace(/[\r\n]+/g, ' ').slice(0, 300);
  const text = [
    greeting,
    '',
    `Please confirm that you want to receive emails from ${input.listName} by opening this link:`,
    '',
    input.link,
    '',
    'The link works for 7 days. If you did not ask for this, ignore this email: you will not be subscribed.',
    '',
  ].join('\n');
  const html = `<!doctype html>
<html lang="en">
<body style="font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:16px;line-height:1.5;color:#1a1a1a">
<p>${escapeHtml(greeting)}</p>
<p>Please confirm that you want to receive emails from <strong>${escapeHtml(input.listName)}</strong>.</p>
<p><a href="${escapeHtml(input.link)}" style="display:inline-block;padding:10px 18px;background:#1f5fbf;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:600">Confirm subscription</a></p>
<p>Or open this address: <a href="${escapeHtml(input.link)}">${escapeHtml(input.link)}</a></p>
<p>The link works for 7 days. If you did not ask for this, ignore this email: you will not be subscribed.</p>
</body>
</html>
`;
  return { subject, text, html };
}
