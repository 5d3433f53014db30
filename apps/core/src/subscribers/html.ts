/** The small public HTML pages: the confirmation page and the list's hosted form. Every value put in is escaped. */

import { escapeHtml } from '../templates/escape';

export { escapeHtml };

/** The name of the hidden field that people leave empty and form-filling bots fill in. */
export const HONEYPOT_FIELD = 'website';

const STYLE = `
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#f6f6f4}
main{max-width:30rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.4rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=email],input[type=text]{box-sizing:border-box;width:100%;padding:.6rem;font:inherit;border:1px solid #767676;border-radius:4px}
button{margin-top:1.25rem;padding:.7rem 1.2rem;font:inherit;font-weight:600;color:#fff;background:#1f5fbf;border:0;border-radius:4px;cursor:pointer}
button:focus,input:focus{outline:3px solid #ffbf47;outline-offset:1px}
.error{color:#b00020;font-weight:600}
.hp{position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden}
`;

export function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

const message = (title: string, ...paragraphs: string[]) =>
  layout(title, `<h1>${escapeHtml(title)}</h1>\n${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}`);

/** GET /confirm/<token>: asks, changes nothing (mail scanners prefetch links). The form posts to the same URL. */
export function confirmPage(listName: string): string {
  return layout(
    `Confirm your subscription to ${listName}`,
    `<h1>Confirm your subscription</h1>
<p>You asked to receive emails from <strong>${escapeHtml(listName)}</strong>. Press the button to confirm.</p>
<form method="post">
<button type="submit">Confirm subscription</button>
</form>
<p>If you did not ask for this, close this page: you will not be subscribed.</p>`,
  );
}

export const confirmedPage = (listName: string) =>
  message('Thank you, you are subscribed', `Your subscription to ${listName} is confirmed.`, 'You can close this page.');

export const alreadyConfirmedPage = (listName: string) =>
  message('You are already subscribed', `Your subscription to ${listName} was already confirmed.`, 'You can close this page.');

export const usedLinkPage = () =>
  message(
    'This link was already used',
    'This confirmation link has already been used and cannot be used again.',
    'If you confirmed earlier, you are on the list. Otherwise, sign up again to get a new link.',
  );

export const expiredLinkPage = () =>
  message('This link has expired', 'Confirmation links work for 7 days. Sign up again to get a new link.');

export const unknownLinkPage = () =>
  message('This link is not valid', 'We could not find this confirmation link. Check that you copied the whole address from the email.');

export const notFoundPage = () => message('Page not found', 'There is nothing at this address.');

export const tooManyPage = () =>
  message('Please try again later', 'This list is receiving a lot of sign-ups right now. Please try again in a little while.');

export const errorPage = () => message('Something went wrong', 'Please try again in a moment.');

export interface FormState {
  email?: string;
  name?: string;
  error?: string;
}

const SUBSCRIBE_FORM_NOTE = 'We will send you an email to confirm your address.';

/** What the hosted form says to the person, as the consent ledger keeps it with their sign-up. */
export const subscribeFormText = (listName: string, topics: FormTopic[] = []) =>
  `Subscribe to ${listName}. Email address; name (optional).${topics.length ? ` Topics: ${topics.map((t) => t.name).join(', ')}.` : ''} ${SUBSCRIBE_FORM_NOTE}`;

/** A public topic of the list, offered on the hosted form (docs/preferences.md). */
export interface FormTopic {
  id: string;
  name: string;
  description: string;
  default: 'in' | 'out';
}

/** What the confirmation page says, as the consent ledger keeps it with the confirmation. */
export const confirmText = (listName: string) => `You asked to receive emails from ${listName}. Press the button to confirm. [Confirm subscription]`;

/** GET /f/<list key>: the list's own subscribe form. The form posts to the same URL. */
export function subscribeFormPage(listName: string, state: FormState = {}, topics: FormTopic[] = []): string {
  const error = state.error
    ? `<p class="error" id="form-error" role="alert">${escapeHtml(state.error)}</p>\n`
    : '';
  const described = state.error ? ' aria-invalid="true" aria-describedby="form-error"' : '';
  return layout(
    `Subscribe to ${listName}`,
    `<h1>Subscribe to ${escapeHtml(listName)}</h1>
${error}<form method="post">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="email" required maxlength="254" value="${escapeHtml(state.email)}"${described}>
<label for="name">Name <span>(optional)</span></label>
<input type="text" id="name" name="name" autocomplete="name" maxlength="200" value="${escapeHtml(state.name)}">
${topicBoxes(topics)}<div class="hp" aria-hidden="true">
<label for="${HONEYPOT_FIELD}">Leave this field empty</label>
<input type="text" id="${HONEYPOT_FIELD}" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off" value="">
</div>
<button type="submit">Subscribe</button>
</form>
<p>${escapeHtml(SUBSCRIBE_FORM_NOTE)}</p>`,
  );
}

function topicBoxes(topics: FormTopic[]): string {
  if (!topics.length) return '';
  const boxes = topics.map(
    (t) => `<label><input type="checkbox" name="topic" value="${escapeHtml(t.id)}"${t.default === 'in' ? ' checked' : ''}> ${escapeHtml(t.name)}</label>${t.description ? `\n<span>${escapeHtml(t.description)}</span>` : ''}`,
  );
  return `<fieldset>\n<legend>Topics</legend>\n<input type="hidden" name="topics_shown" value="1">\n${boxes.join('\n')}\n</fieldset>\n`;
}

/** The answer to every accepted form post: it never tells whether the address was already on the list. */
export const checkInboxPage = (listName: string) =>
  message(
    'Check your inbox',
    `If this address can join ${listName}, we have sent it an email with a link to confirm the subscription.`,
    'Open the link in that email to finish. It works for 7 days.',
  );

/** GET /u/<token>: asks, changes nothing (mail scanners prefetch links). The form posts to the same URL. */
export function unsubscribePage(listName: string): string {
  return layout(
    `Unsubscribe from ${listName}`,
    `<h1>Unsubscribe</h1>
<p>Press the button to stop receiving emails from <strong>${escapeHtml(listName)}</strong>.</p>
<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Unsubscribe</button>
</form>`,
  );
}

export const unsubscribedPage = (listName: string) =>
  message('You are unsubscribed', `You will receive no more emails from ${listName}.`, 'You can close this page.');

export const unknownUnsubscribeLinkPage = () =>
  message('This link is not valid', 'We could not find this unsubscribe link. Check that you copied the whole address from the email.');

/**
 * The HTML a site owner pastes to put the hosted form on their own page: posts to the list's form address with the
 * form's fields, the hidden honeypot included (a bot that fills it is answered as a person and nothing is stored).
 * The service answers with its own pages (check your inbox, or the form again with the error).
 */
export function embedSnippet(formUrl: string, topics: FormTopic[] = []): string {
  // the list's public topics as the hosted form offers them (ticked by their default); `topics_shown` says the boxes were there
  const boxes = topics.length
    ? `  <input type="hidden" name="topics_shown" value="1">\n${topics.map((t) => `  <label><input type="checkbox" name="topic" value="${escapeHtml(t.id)}"${t.default === 'in' ? ' checked' : ''}> ${escapeHtml(t.name)}</label>\n`).join('')}`
    : '';
  return `<form method="post" action="${escapeHtml(formUrl)}">
  <label>Email address <input type="email" name="email" required maxlength="254" autocomplete="email"></label>
  <label>Name <input type="text" name="name" maxlength="200" autocomplete="name"></label>
${boxes}  <div style="position:absolute;left:-10000px" aria-hidden="true"><input type="text" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off" value=""></div>
  <button type="submit">Subscribe</button>
</form>`;
}
