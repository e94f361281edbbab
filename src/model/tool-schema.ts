/*
 * A tool's JSON Schema in the dialect a provider accepts. zod writes draft 2020-12 with a
 * `$schema` key; Gemini (native and through its OpenAI endpoint) refuses any request whose
 * tools carry keys outside its OpenAPI 3.0 subset, `$schema` and `additionalProperties`
 * among them. The native Google package converts on its own; the OpenAI endpoint needs us.
 */
import type { JSONSchema7 } from '@ai-sdk/provider';

export type SchemaDialect = 'json-schema' | 'gemini';

export function toolSchemaFor(schema: unknown, dialect: SchemaDialect): JSONSchema7 {
  const object = isRecord(schema) ? schema : { type: 'object' };
  return (dialect === 'gemini' ? geminiSchema(object) : withoutMetaKeys(object)) as JSONSchema7;
}

function withoutMetaKeys(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _schema, ...rest } = schema;
  return rest;
}

/** The keys of Gemini's Schema object (ai.google.dev/api/caching#Schema) that a JSON Schema can carry over. */
const GEMINI_KEYS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);

function geminiSchema(input: Record<string, unknown>): Record<string, unknown> {
  const schema = withoutNullBranch(input);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'const') out['enum'] = [value];
    else if (key === 'type' && Array.isArray(value)) {
      // ["string", "null"] is how JSON Schema says nullable.
      const types = value.filter((t) => t !== 'null');
      if (types.length === 1) out['type'] = types[0];
      if (types.length < value.length) out['nullable'] = true;
    } else if (!GEMINI_KEYS.has(key)) continue;
    else if (key === 'properties' && isRecord(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, isRecord(sub) ? geminiSchema(sub) : sub]),
      );
    } else if (key === 'items' && isRecord(value)) out[key] = geminiSchema(value);
    else if (key === 'anyOf' && Array.isArray(value))
      out[key] = value.map((sub) => (isRecord(sub) ? geminiSchema(sub) : sub));
    else out[key] = value;
  }
  return out;
}

/** zod writes `.nullable()` as `anyOf: [X, {type: "null"}]`; Gemini has no null type but a `nullable` flag. */
function withoutNullBranch(schema: Record<string, unknown>): Record<string, unknown> {
  const anyOf = schema['anyOf'];
  if (!Array.isArray(anyOf) || !anyOf.some((branch) => isRecord(branch) && branch['type'] === 'null')) return schema;
  const { anyOf: _anyOf, ...rest } = schema;
  const branches = anyOf.filter((branch) => !(isRecord(branch) && branch['type'] === 'null'));
  const only = branches.length === 1 && isRecord(branches[0]) ? branches[0] : undefined;
  return { ...rest, ...(only ?? { anyOf: branches }), nullable: true };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
