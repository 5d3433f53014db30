/**
 * Links that are made per copy on the way to the wire (delivery/compose.ts), never stored usable: the rendered body
 * keeps a marker where the link goes, and the marker is put in as the value of its variable when the email is
 * rendered. The markers hold nothing that HTML-escaping changes, so they come out of an html part as they went in.
 */
export const UNSUBSCRIBE_URL_MARKER = '{{unsubscribe_url}}';
export const CONFIRMATION_LINK_MARKER = '{{confirmation_link}}';
export const PREFERENCES_URL_MARKER = '{{preferences_url}}';

/** A stored body or header with `value` in place of `marker` (a row written without the marker passes as it is). */
export function fillMarker<T extends string | null>(stored: T, marker: string, value: () => string): T {
  if (stored === null || !stored.includes(marker)) return stored;
  return stored.split(marker).join(value()) as T;
}

/** Does a link of a template hold Liquid markup (a variable or a tag)? Such a link is left as written (not tracked). */
export const holdsMarkup = (url: string) => url.includes('{{') || url.includes('{%');
