import { header, type Headers } from './mime';

/**
 * Filtering appliances that write their own reports, known by the headers they add to them: McAfee Email Gateway
 * (X-NAI-Header) and its hosted MXLogic, SurfControl E-mail Filter, ActiveHunter, MailFoundry. They stand in front of the
 * mailbox server and answer "user unknown" from a recipient list or a rule of their own, so such an answer without an
 * x.1.x status (the mailbox server's own verdict) does not prove the address dead: sisimai calls it `filtered`.
 */
const GATEWAYS: { name: string; test: (headers: Headers) => boolean }[] = [
  { name: 'McAfee', test: (h) => /mcafee/i.test(header(h, 'x-nai-header')) },
  { name: 'MXLogic', test: (h) => /@[\w.-]*\.mxlogic\.net\b/i.test(header(h, 'from')) },
  { name: 'SurfControl', test: (h) => /surfcontrol/i.test(header(h, 'x-mailer')) },
  { name: 'ActiveHunter', test: (h) => h.has('x-ahmailid') },
  { name: 'MailFoundry', test: (h) => (h.get('received') ?? []).some((r) => /\(MAILFOUNDRY\)/.test(r)) },
];

/** The filtering appliance that wrote a report, by its headers, or null. */
export function filteringGateway(headers: Headers): string | null {
  return GATEWAYS.find((g) => g.test(headers))?.name ?? null;
}
