import { renderSubject, type TemplateContext } from '../templates/render';

/**
 * Follow-ups reply in the thread of the first email. Their subject is "Re: <first subject>" unless the step has a
 * subject of its own (a template different from step 1's); threading headers are set either way.
 */
export function followUpSubject(stepTemplate: string, firstTemplate: string, ctx: TemplateContext): string {
  const own = stepTemplate.trim();
  if (own && own !== firstTemplate.trim()) return renderSubject(own, ctx);
  const first = renderSubject(firstTemplate, ctx);
  return /^re:/i.test(first) ? first : `Re: ${first}`;
}
