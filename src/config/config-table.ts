/*
 * The README's configuration table, rendered from the config schema: one row per key with its
 * type and bounds, its default, whether a change applies live or on restart, and its
 * `.describe()` text. The schema is read through zod's own JSON Schema export, so a key added
 * to schema.ts shows up here without any change to this file, and the README cannot drift
 * from the code (test/config/config-table.test.ts compares them).
 */
import { z } from 'zod';
import { HOT_SECTIONS } from './diff.js';
import { ConfigSchema } from './schema.js';

/** The comments around the generated table in the README; `npm run docs:config` rewrites what lies between. */
export const CONFIG_TABLE_START =
  '<!-- config-table:start (generated from src/config/schema.ts by `npm run docs:config`; do not edit) -->';
export const CONFIG_TABLE_END = '<!-- config-table:end -->';

/** One key of one TOML table, or (with `isTable`) the header of a table. */
export interface ConfigKeyRow {
  /** The TOML table the key lives in: `execution`, `models.<id>`, `[sandbox.command_policy.rules]` for an array of tables. */
  table: string;
  /** The key; empty on a table's header row. */
  key: string;
  isTable: boolean;
  type: string;
  /** The default as TOML would write it, `required`, or `—` for an optional key without one. */
  default: string;
  /** Whether a changed value applies to the next decision or needs a restart (see diff.ts). */
  applies: 'live' | 'restart';
  description: string;
}

type JsonSchema = {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  format?: string;
};

export function configKeyRows(
  schema: z.ZodType = ConfigSchema,
  hotSections: readonly string[] = HOT_SECTIONS,
): ConfigKeyRow[] {
  const root = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const walker = new TableWalker(root, hotSections);
  walker.table(root, [], '');
  return walker.rows;
}

/** The markdown table: a header row per TOML table, then a row per key. */
export function renderConfigTable(
  schema: z.ZodType = ConfigSchema,
  hotSections: readonly string[] = HOT_SECTIONS,
): string {
  const lines = ['| key | type | default | applies | what it does |', '|---|---|---|---|---|'];
  for (const row of configKeyRows(schema, hotSections)) {
    const cells = row.isTable
      ? [`**\`[${row.table}]\`**`, row.type, row.default, row.applies, row.description]
      : [`\`${row.key}\``, row.type, row.default, row.applies, row.description];
    lines.push(`| ${cells.map(cell).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** `document` with everything between the two marker comments replaced by `content`. */
export function replaceGeneratedSection(document: string, content: string): string {
  const start = document.indexOf(CONFIG_TABLE_START);
  const end = document.indexOf(CONFIG_TABLE_END);
  if (start < 0 || end < start) {
    throw new Error(
      `the document has no generated configuration section: put ${CONFIG_TABLE_START} and ${CONFIG_TABLE_END} on lines of their own where the table belongs`,
    );
  }
  return `${document.slice(0, start + CONFIG_TABLE_START.length)}\n${content}\n${document.slice(end)}`;
}

/** What lies between the two marker comments, or undefined when they are missing. */
export function generatedSectionOf(document: string): string | undefined {
  const start = document.indexOf(CONFIG_TABLE_START);
  const end = document.indexOf(CONFIG_TABLE_END);
  if (start < 0 || end < start) return undefined;
  return document.slice(start + CONFIG_TABLE_START.length, end).trim();
}

class TableWalker {
  readonly rows: ConfigKeyRow[] = [];

  constructor(
    private readonly root: JsonSchema,
    private readonly hotSections: readonly string[],
  ) {}

  /** The rows of one TOML table: its own keys first, then its sub-tables, as TOML writes them. */
  table(node: JsonSchema, path: string[], heading: string): void {
    const properties = this.propertiesOf(node);
    const required = new Set(this.requiredOf(node));
    const nested: [string, JsonSchema][] = [];
    for (const [key, raw] of Object.entries(properties)) {
      const property = this.resolve(raw);
      if (this.tableKind(property) !== undefined) nested.push([key, raw]);
      else this.rows.push(this.keyRow(heading, [...path, key], key, raw, required.has(key)));
    }
    for (const [key, raw] of nested) this.subTable([...path, key], raw);
  }

  private subTable(path: string[], raw: JsonSchema): void {
    const node = this.resolve(raw);
    const dotted = path.join('.');
    // An empty table as the default says nothing; an array of tables shows its `[]`.
    const value = raw.default ?? node.default;
    const shown =
      value === undefined || (isPlainObject(value) && Object.keys(value).length === 0) ? '' : `\`${tomlValue(value)}\``;
    const header = (table: string, type: string): void => {
      this.rows.push({
        table,
        key: '',
        isTable: true,
        type,
        default: shown,
        applies: this.applies(dotted),
        description: this.describe(raw),
      });
    };
    switch (this.tableKind(node)) {
      case 'object':
        header(dotted, 'table');
        this.table(node, path, dotted);
        break;
      case 'record': {
        const table = `${dotted}.<id>`;
        header(table, 'tables by id');
        this.table(this.resolve(node.additionalProperties as JsonSchema), [...path, '<id>'], table);
        break;
      }
      case 'array': {
        const table = `[${dotted}]`;
        header(table, 'array of tables');
        this.table(this.resolve(node.items!), path, table);
        break;
      }
    }
  }

  private keyRow(table: string, path: string[], key: string, raw: JsonSchema, required: boolean): ConfigKeyRow {
    const node = this.resolve(raw);
    const fallback = required ? 'required' : '—';
    const value = raw.default !== undefined ? raw.default : node.default;
    return {
      table,
      key,
      isTable: false,
      type: this.typeOf(node),
      // TOML has no null: a null default means the key is left out.
      default: value === undefined || value === null ? fallback : `\`${tomlValue(value)}\``,
      applies: this.applies(path.join('.')),
      description: this.describe(raw),
    };
  }

  /** A property that is itself a TOML table: an object with keys, a table of such objects, or an array of them. */
  private tableKind(node: JsonSchema): 'object' | 'record' | 'array' | undefined {
    if (this.isObjectWithKeys(node)) return 'object';
    if (typeof node.additionalProperties === 'object' && this.isObjectWithKeys(this.resolve(node.additionalProperties)))
      return 'record';
    if (node.items && this.isObjectWithKeys(this.resolve(node.items))) return 'array';
    return undefined;
  }

  /** An object with named keys; a union only when every alternative is one (a discriminated union of tables). */
  private isObjectWithKeys(node: JsonSchema): boolean {
    if (node.properties && Object.keys(node.properties).length > 0) return true;
    const alternatives = this.alternativesOf(node);
    return alternatives.length > 0 && alternatives.every((a) => this.isObjectWithKeys(a));
  }

  private alternativesOf(node: JsonSchema): JsonSchema[] {
    return [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])]
      .map((a) => this.resolve(a))
      .filter((a) => a.type !== 'null');
  }

  /**
   * Keys of an object schema. The alternatives of a union are merged: a key several of them
   * name becomes the union of its schemas there (so `kind` lists every kind), the first
   * description winning.
   */
  private propertiesOf(node: JsonSchema): Record<string, JsonSchema> {
    const merged: Record<string, JsonSchema> = { ...(node.properties ?? {}) };
    for (const alternative of this.alternativesOf(node)) {
      for (const [key, value] of Object.entries(this.propertiesOf(alternative))) {
        const earlier = merged[key];
        if (earlier === undefined) merged[key] = value;
        else if (this.typeOf(this.resolve(earlier)) !== this.typeOf(this.resolve(value))) {
          merged[key] = {
            anyOf: [earlier, value],
            ...(this.describe(earlier) ? { description: this.describe(earlier) } : {}),
          };
        }
      }
    }
    return merged;
  }

  private requiredOf(node: JsonSchema): string[] {
    const alternatives = [...(node.anyOf ?? []), ...(node.oneOf ?? [])].map((a) => this.requiredOf(this.resolve(a)));
    // A key of a union is required only when every alternative requires it.
    const fromUnion = alternatives.length > 0 ? alternatives.reduce((a, b) => a.filter((key) => b.includes(key))) : [];
    const fromAll = (node.allOf ?? []).flatMap((a) => this.requiredOf(this.resolve(a)));
    return [...(node.required ?? []), ...fromUnion, ...fromAll];
  }

  private typeOf(node: JsonSchema): string {
    if (node.anyOf ?? node.oneOf) {
      const types = this.flatAlternatives(node).filter((a) => a.type !== 'null');
      // Alternatives that are all fixed values read as one list of values.
      if (types.every((a) => a.enum !== undefined || a.const !== undefined)) {
        return this.typeOf({ enum: [...new Set(types.flatMap((a) => a.enum ?? [a.const]))] });
      }
      return [...new Set(types.map((a) => this.typeOf(a)))].join(' or ');
    }
    if (node.enum) return node.enum.map((value) => `\`${tomlValue(value)}\``).join(', ');
    if (node.const !== undefined) return `\`${tomlValue(node.const)}\``;
    // A nullable scalar: TOML has no null, so the key is simply left out.
    if (Array.isArray(node.type)) {
      return node.type
        .filter((type) => type !== 'null')
        .map((type) => this.typeOf({ ...node, type }))
        .join(' or ');
    }
    switch (node.type) {
      case 'integer':
      case 'number':
        return `${node.type}${boundsOf(node)}`;
      case 'string':
        if (node.format === 'uri') return 'URL';
        return (node.minLength ?? 0) > 0 ? 'non-empty string' : 'string';
      case 'boolean':
        return 'boolean';
      case 'array':
        return node.items ? `array of ${plural(this.typeOf(this.resolve(node.items)))}` : 'array';
      case 'object':
        return typeof node.additionalProperties === 'object'
          ? `table of name → ${this.typeOf(this.resolve(node.additionalProperties))}`
          : 'table';
      default:
        return 'any';
    }
  }

  /** The alternatives of a union, with unions inside it opened up. */
  private flatAlternatives(node: JsonSchema): JsonSchema[] {
    const alternatives = node.anyOf ?? node.oneOf;
    if (!alternatives) return [node];
    return alternatives.flatMap((a) => this.flatAlternatives(this.resolve(a)));
  }

  private describe(raw: JsonSchema): string {
    return raw.description ?? this.resolve(raw).description ?? '';
  }

  private applies(dotted: string): 'live' | 'restart' {
    return this.hotSections.some((section) => dotted === section || dotted.startsWith(`${section}.`))
      ? 'live'
      : 'restart';
  }

  private resolve(node: JsonSchema): JsonSchema {
    if (!node.$ref) return node;
    const name = node.$ref.replace(/^#\/\$defs\//, '');
    const target = this.root.$defs?.[name];
    return target ? { ...this.resolve(target), ...(node.description ? { description: node.description } : {}) } : node;
  }
}

function boundsOf(node: JsonSchema): string {
  // zod writes Number.MAX_SAFE_INTEGER as the maximum of every .int(); that is no real bound.
  const maximum = node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER ? node.maximum : undefined;
  if (node.minimum !== undefined && maximum !== undefined) return ` from ${node.minimum} to ${maximum}`;
  const bounds = [
    node.minimum !== undefined ? `≥ ${node.minimum}` : undefined,
    node.exclusiveMinimum !== undefined ? `> ${node.exclusiveMinimum}` : undefined,
    maximum !== undefined ? `≤ ${maximum}` : undefined,
    node.exclusiveMaximum !== undefined ? `< ${node.exclusiveMaximum}` : undefined,
  ].filter((bound) => bound !== undefined);
  return bounds.length > 0 ? ` ${bounds.join(', ')}` : '';
}

function plural(type: string): string {
  return /^(string|integer|number|boolean|table)\b/.test(type) ? type.replace(/^(\w+)/, '$1s') : type;
}

/** A value as it is written in TOML: strings quoted, tables inline. */
function tomlValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  if (isPlainObject(value)) {
    const entries = Object.entries(value).map(([key, inner]) => `${key} = ${tomlValue(inner)}`);
    return entries.length === 0 ? '{}' : `{ ${entries.join(', ')} }`;
  }
  return JSON.stringify(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A markdown table cell: pipes escaped, so a value or description cannot break the row. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n+/g, ' ');
}
