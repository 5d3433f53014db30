import { escapeHtml, layout } from '../subscribers/html';
import type { Topic } from '../topics';
import { PAUSE_DAYS, type PreferencesView } from './service';

/**
 * The preference centre's pages (docs/preferences.md). Every value put in is escaped; the forms post to the page's own
 * address (the token is in it), so the page works without script.
 */

const message = (title: string, ...paragraphs: string[]) =>
  layout(title, `<h1>${escapeHtml(title)}</h1>\n${paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('\n')}`);

const day = (d: Date) => d.toISOString().slice(0, 10);

/** GET /preferences/<token>: topics, pause, name, leave. `note` says what the last post did; `error` what it refused. */
export function preferencesPage(view: PreferencesView, state: { note?: string; error?: string } = {}): string {
  const title = `Your emails from ${view.listName}`;
  if (!view.subscribed) {
    return layout(title, `<h1>${escapeHtml(title)}</h1>\n<p id="status">You are not subscribed to <strong>${escapeHtml(view.listName)}</strong> (${escapeHtml(view.email)}): you receive no emails from it.</p>`);
  }
  const note = state.note ? `<p id="status" role="status">${escapeHtml(state.note)}</p>\n` : '';
  const error = state.error ? `<p class="error" id="form-error" role="alert">${escapeHtml(state.error)}</p>\n` : '';
  const topics = view.topics.length
    ? `<fieldset>
<legend>Topics you receive</legend>
<input type="hidden" name="topics_shown" value="1">
${view.topics
  .map(
    (t) => `<label class="topic"><input type="checkbox" name="topic" value="${escapeHtml(t.id)}"${t.in ? ' checked' : ''}> ${escapeHtml(t.name)}</label>${
      t.description ? `\n<span class="hint">${escapeHtml(t.description)}</span>` : ''
    }`,
  )
  .join('\n')}
</fieldset>`
    : '';
  const paused = view.pausedUntil
    ? `<p id="paused">Emails are paused until ${day(view.pausedUntil)}.</p>
<label class="topic"><input type="radio" name="pause" value="resume"> Resume emails now</label>`
    : '';
  const pauses = PAUSE_DAYS.map((d) => `<label class="topic"><input type="radio" name="pause" value="${d}"> Pause all emails for ${d} days</label>`).join('\n');
  return layout(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p>Preferences for <strong>${escapeHtml(view.email)}</strong>.</p>
${note}${error}<form method="post">
<input type="hidden" name="action" value="save">
${topics}
<fieldset>
<legend>Pause</legend>
${paused}
<label class="topic"><input type="radio" name="pause" value="" checked> ${view.pausedUntil ? 'Keep the pause' : 'Keep receiving emails'}</label>
${pauses}
</fieldset>
<label for="name">Your name</label>
<input type="text" id="name" name="name" autocomplete="name" maxlength="200" value="${escapeHtml(view.name)}">
<button type="submit" id="save">Save my choices</button>
</form>
<form method="post" class="leave">
<input type="hidden" name="action" value="leave">
<p>Or stop all emails from ${escapeHtml(view.listName)}.</p>
<button type="submit" id="leave">Leave the list</button>
</form>`,
  );
}

/** The text of the page, as the consent ledger keeps it with the choices made on it. */
export function preferencesText(view: PreferencesView): string {
  const topics = view.topics.map((t) => `[${t.in ? 'x' : ' '}] ${t.name}`).join('; ');
  return `Your emails from ${view.listName}. Topics: ${topics || 'none'}. Pause: ${PAUSE_DAYS.map((d) => `${d} days`).join(' or ')}. Your name. [Save my choices] [Leave the list]`;
}

export const leftPage = (listName: string) =>
  message('You left the list', `You will receive no more emails from ${listName}.`, 'You can close this page.');

export const unknownPreferencesLinkPage = () =>
  message('This link is not valid', 'We could not find this preferences link. Ask for a new one on the list\'s preferences page.');

/** GET /preferences/list/<key>: the "send me my link" form. */
export function requestLinkPage(listName: string, state: { email?: string; error?: string } = {}): string {
  const error = state.error ? `<p class="error" id="form-error" role="alert">${escapeHtml(state.error)}</p>\n` : '';
  return layout(
    `Your preferences for ${listName}`,
    `<h1>Your preferences for ${escapeHtml(listName)}</h1>
<p>Enter your address and we will email you a link to your preferences.</p>
${error}<form method="post">
<label for="email">Email address</label>
<input type="email" id="email" name="email" autocomplete="email" required maxlength="254" value="${escapeHtml(state.email)}">
<button type="submit">Send me my link</button>
</form>`,
  );
}

/** The answer to every accepted link request: it never tells whether the address is on the list. */
export const linkSentPage = (listName: string) =>
  message('Check your inbox', `If this address is subscribed to ${listName}, we have sent it an email with the link to its preferences.`);

const names = (topics: Topic[]) => topics.map((t) => t.name).join(', ');

/** GET /u/<token>/t/<topics>: asks, changes nothing (link scanners). */
export function topicUnsubscribePage(listName: string, topics: Topic[]): string {
  return layout(
    `Stop ${names(topics)}`,
    `<h1>Stop ${escapeHtml(names(topics))}</h1>
<p>Press the button to stop receiving <strong>${escapeHtml(names(topics))}</strong> from ${escapeHtml(listName)}. You stay on the list for its other emails.</p>
<form method="post">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">Stop these emails</button>
</form>`,
  );
}

export const topicLeftPage = (listName: string, topics: Topic[]) =>
  message('Done', `You will receive no more ${names(topics)} from ${listName}.`, 'You stay on the list for its other emails.');
