import { variablePathsOf } from './engine';
import { CONTENT_VARIABLE } from './content';

/** What the service fills itself in every send: never asked of the person previewing or test-sending. */
const FILLED = new Set(['unsubscribe_url', 'preferences_url', 'confirmation_link', CONTENT_VARIABLE]);

/**
 * The variables a template reads (subject, html, text) and its required ones, as paths in first-seen order, less what
 * the service fills: the fields the console's compose and test-send forms ask for.
 */
export function templateVariables(t: { subject: string; html: string | null; text: string | null; required: string[] }): string[] {
  const paths = [...variablePathsOf(t.subject, 'subject'), ...(t.html ? variablePathsOf(t.html, 'html') : []), ...(t.text ? variablePathsOf(t.text, 'text') : []), ...t.required];
  return [...new Set(paths)].filter((p) => !FILLED.has(p.split('.')[0]!));
}

const UNSAFE = new Set(['__proto__', 'prototype', 'constructor']);

/** Form values by path (`fields.city`) as the nested variables a render takes (`{fields: {city}}`); blanks left out. */
export function variablesFromPaths(values: Record<string, string>): Record<string, unknown> {
  const variables: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(values)) {
    if (value === '') continue;
    const parts = path.split('.');
    if (parts.some((part) => UNSAFE.has(part))) continue;
    let at = variables;
    for (const part of parts.slice(0, -1)) {
      const next = at[part];
      at = (at[part] = next && typeof next === 'object' ? next : {}) as Record<string, unknown>;
    }
    at[parts.at(-1)!] = value;
  }
  return variables;
}
