/** `npm run admin -- template ...`: stored templates and layouts (docs/templates.md), imported by scripts/admin.ts. */
import fs from 'node:fs';
import type { Db } from '../apps/core/src/db';
import { creation, templateChange } from '../apps/core/src/changes';
import { cliChange } from './admin-audit';
import { AppError } from '../apps/core/src/errors';
import { idParam, validate } from '../apps/core/src/validate';
import * as schemas from '../apps/core/src/templates/schema';
import { changeTemplate, createTemplate, deleteTemplate, getTemplate, listTemplates, listVersions, previewTemplate, restoreVersion } from '../apps/core/src/templates/service';
import { sendTestEmail } from '../apps/core/src/sending/template-test';

export const TEMPLATE_HELP = `  template create --account ID --name NAME [--kind template|layout] [--alias A] [--subject S] [--html-file F] [--text-file F]
                  [--layout ID|ALIAS] [--required a,b] [--no-inline-css] [--no-text-from-html]
  template set ID [the same flags]     (a new version)
  template list --account ID [--kind template|layout]
  template show ID
  template versions ID
  template restore ID --version N
  template preview ID [--variables '{"name":"Ann"}']
  template test ID --to ADDRESS [--variables JSON] [--mailbox ID]
  template delete ID
`;

export const templateOptions = {
  kind: { type: 'string' },
  alias: { type: 'string' },
  subject: { type: 'string' },
  'html-file': { type: 'string' },
  'text-file': { type: 'string' },
  layout: { type: 'string' },
  required: { type: 'string' },
  'no-inline-css': { type: 'boolean' },
  'no-text-from-html': { type: 'boolean' },
  variables: { type: 'string' },
  version: { type: 'string' },
} as const;

type Flags = Record<string, string | boolean | undefined>;

const read = (file: unknown) => (typeof file === 'string' ? fs.readFileSync(file, 'utf8') : undefined);
const list = (value: unknown) => (typeof value === 'string' ? value.split(',').map((s) => s.trim()).filter(Boolean) : undefined);

function variablesOf(flags: Flags): unknown {
  if (typeof flags.variables !== 'string') return undefined;
  try {
    return JSON.parse(flags.variables);
  } catch {
    throw new AppError('--variables: give a JSON object, e.g. \'{"name":"Ann"}\'');
  }
}

/** The content flags as the admin API's fields (only those given). */
function fieldsOf(flags: Flags): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    name: flags.name,
    alias: flags.alias,
    subject: flags.subject,
    html: read(flags['html-file']),
    text: read(flags['text-file']),
    layout: flags.layout,
    required: list(flags.required),
    inline_css: flags['no-inline-css'] ? false : undefined,
    text_from_html: flags['no-text-from-html'] ? false : undefined,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

export async function templateCommand(d: Db, action: string | undefined, arg: string | undefined, flags: Flags): Promise<unknown> {
  switch (action) {
    case 'create': {
      const input = validate(schemas.templateInput, { account: flags.account, kind: flags.kind, ...fieldsOf(flags) });
      return { template: await cliChange(d, creation('template'), (db: Db) => createTemplate(db, input)) };
    }
    case 'set': {
      const id = validate(idParam, arg);
      const changes = validate(schemas.templateChanges, fieldsOf(flags));
      return { template: await cliChange(d, templateChange('update', id), (db: Db) => changeTemplate(db, id, changes)) };
    }
    case 'list': {
      const query = validate(schemas.templatesQuery, { account: flags.account, kind: flags.kind });
      return { templates: await listTemplates(d, query.account, query.kind) };
    }
    case 'show':
      return { template: await getTemplate(d, validate(idParam, arg)) };
    case 'versions':
      return { versions: await listVersions(d, validate(idParam, arg)) };
    case 'restore': {
      const id = validate(idParam, arg);
      const { version } = validate(schemas.restoreInput, { version: flags.version });
      return { template: await cliChange(d, templateChange('restore', id), (db: Db) => restoreVersion(db, id, version)) };
    }
    case 'preview':
      return previewTemplate(d, validate(idParam, arg), validate(schemas.previewInput, { variables: variablesOf(flags) }).variables);
    case 'test': {
      const id = validate(idParam, arg);
      const input = validate(schemas.testSendInput, { to: flags.to, variables: variablesOf(flags), mailbox: flags.mailbox });
      return { message: await cliChange(d, { ...templateChange('test-send', id), before: undefined }, (db: Db) => sendTestEmail(db, id, input)) };
    }
    case 'delete': {
      const id = validate(idParam, arg);
      await cliChange(d, { ...templateChange('delete', id), after: undefined }, (db: Db) => deleteTemplate(db, id));
      return {};
    }
    default:
      throw new AppError(`unknown template command "${action ?? ''}"\n\n${TEMPLATE_HELP}`);
  }
}
