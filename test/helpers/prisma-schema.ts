import fs from 'node:fs';

/** A small reader of the parts of schema.prisma the drift test compares: models, fields, enums, keys and indexes. */
export interface FieldDef {
  name: string;
  column: string;
  type: string;
  optional: boolean;
  list: boolean;
  nativeType?: string;
  relation?: { fields: string[]; references: string[] };
  unique: boolean;
  id: boolean;
}

export interface ModelDef {
  name: string;
  table: string;
  fields: FieldDef[];
  /** column lists */
  primaryKey: string[];
  uniques: string[][];
  indexes: string[][];
}

export interface SchemaDef {
  models: Map<string, ModelDef>;
  enums: Map<string, string[]>;
}

const listOf = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function readPrismaSchema(file: string): SchemaDef {
  const source = fs.readFileSync(file, 'utf8').replace(/\/\/.*$/gm, '');
  const enums = new Map<string, string[]>();
  // a block runs from `model X {` to the first line that is only `}` (bodies may contain braces, e.g. @default("{}"))
  const blocks = (kind: string) =>
    [...source.matchAll(new RegExp(`^${kind}\\s+(\\w+)\\s*\\{\\n([\\s\\S]*?)^\\}`, 'gm'))].map(([, name, body]) => ({ name: name!, body: body! }));
  for (const { name, body } of blocks('enum')) enums.set(name, body.split(/\s+/).filter(Boolean));
  const raw = blocks('model');
  const modelNames = new Set(raw.map((m) => m.name));
  const models = new Map<string, ModelDef>();
  for (const { name, body } of raw) {
    const lines = body.split('\n').map((l) => l.trim()).filter(Boolean);
    const table = /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? name;
    const fields: FieldDef[] = [];
    for (const line of lines.filter((l) => !l.startsWith('@@'))) {
      const match = /^(\w+)\s+(\w+)(\[\])?(\?)?\s*(.*)$/.exec(line);
      if (!match) continue;
      const [, fieldName, type, list, optional, attrs = ''] = match;
      const relation = /@relation\([^)]*fields:\s*\[([^\]]*)\][^)]*references:\s*\[([^\]]*)\]/.exec(attrs);
      fields.push({
        name: fieldName!,
        column: /@map\("([^"]+)"\)/.exec(attrs)?.[1] ?? fieldName!,
        type: type!,
        optional: Boolean(optional),
        list: Boolean(list),
        nativeType: /@db\.(\w+(?:\([^)]*\))?)/.exec(attrs)?.[1],
        relation: relation ? { fields: listOf(relation[1]!), references: listOf(relation[2]!) } : undefined,
        unique: /@unique\b/.test(attrs),
        id: /@id\b/.test(attrs),
      });
    }
    const columnOf = (field: string) => fields.find((f) => f.name === field)?.column ?? field;
    const blockLists = (attr: string) =>
      [...body.matchAll(new RegExp(`@@${attr}\\(\\[([^\\]]*)\\]`, 'g'))].map(([, cols]) => listOf(cols!).map(columnOf));
    const scalarFields = fields.filter((f) => !modelNames.has(f.type));
    models.set(name, {
      name,
      table,
      fields,
      primaryKey: scalarFields.filter((f) => f.id).map((f) => f.column).concat(...blockLists('id')),
      uniques: scalarFields.filter((f) => f.unique).map((f) => [f.column]).concat(blockLists('unique')),
      indexes: blockLists('index'),
    });
  }
  return { models, enums };
}

/** The Postgres type Prisma gives a scalar field, as `format_type()` prints it. */
export function expectedPgType(field: FieldDef, enums: Map<string, string[]>): string {
  let base: string;
  const native = field.nativeType;
  if (enums.has(field.type)) base = `"${field.type}"`;
  else if (native) {
    const [, kind, args] = /^(\w+)(?:\((.*)\))?$/.exec(native)!;
    base =
      ({
        Char: `character(${args})`,
        VarChar: `character varying(${args})`,
        Uuid: 'uuid',
        Timestamptz: `timestamp(${args ?? 6}) with time zone`,
        Timestamp: `timestamp(${args ?? 6}) without time zone`,
        Date: 'date',
        Text: 'text',
      } as Record<string, string>)[kind!] ?? `unknown native ${native}`;
  } else {
    base =
      ({
        String: 'text',
        Int: 'integer',
        BigInt: 'bigint',
        Boolean: 'boolean',
        Float: 'double precision',
        Decimal: 'numeric(65,30)',
        DateTime: 'timestamp(3) without time zone',
        Json: 'jsonb',
        Bytes: 'bytea',
      } as Record<string, string>)[field.type] ?? `unknown type ${field.type}`;
  }
  return field.list ? `${base}[]` : base;
}
