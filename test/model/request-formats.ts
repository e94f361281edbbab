/*
 * The request bodies the providers publish, as strict schemas plus the rules their servers
 * enforce beyond shape (a tool result answers a call of the assistant turn before it; tool
 * arguments are a JSON object; Gemini's schema subset). A strict test server answers 400 to
 * anything these refuse, the way Qwen, Anthropic and Gemini do.
 *
 * OpenAI: platform.openai.com/docs/api-reference/chat/create. Anthropic:
 * docs.anthropic.com/en/api/messages. Gemini: ai.google.dev/api/generate-content.
 */
import { z } from 'zod';

const jsonObject = z.record(z.string(), z.unknown());

/** A JSON Schema as OpenAI-compatible servers take it: an object schema, no `$schema` meta key. */
const openAIParameters = jsonObject.refine(
  (s) => s['type'] === 'object' && !('$schema' in s),
  'parameters must be an object schema without $schema',
);

const openAIToolCall = z
  .object({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z.object({ name: z.string().min(1), arguments: z.string() }).strict(),
    extra_content: z
      .object({ google: z.object({ thought_signature: z.string() }).strict() })
      .strict()
      .optional(),
  })
  .strict();

const openAIMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }).strict(),
  z.object({ role: z.literal('developer'), content: z.string() }).strict(),
  z
    .object({
      role: z.literal('user'),
      content: z.union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }).strict())]),
    })
    .strict(),
  z
    .object({
      role: z.literal('assistant'),
      content: z.string().nullable(),
      tool_calls: z.array(openAIToolCall).min(1).optional(),
      reasoning_content: z.string().optional(),
    })
    .strict(),
  z.object({ role: z.literal('tool'), tool_call_id: z.string().min(1), content: z.string() }).strict(),
]);

export const openAIChatRequest = z
  .object({
    model: z.string().min(1),
    messages: z.array(openAIMessage).min(1),
    stream: z.literal(true),
    stream_options: z.object({ include_usage: z.boolean() }).strict().optional(),
    tools: z
      .array(
        z
          .object({
            type: z.literal('function'),
            function: z
              .object({ name: z.string(), description: z.string().optional(), parameters: openAIParameters })
              .strict(),
          })
          .strict(),
      )
      .optional(),
    tool_choice: z
      .union([
        z.enum(['auto', 'none', 'required']),
        z.object({ type: z.literal('function'), function: z.object({ name: z.string() }).strict() }).strict(),
      ])
      .optional(),
    parallel_tool_calls: z.boolean().optional(),
    temperature: z.number().optional(),
    max_tokens: z.number().int().positive().optional(),
    max_completion_tokens: z.number().int().positive().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    let open = new Set<string>();
    body.messages.forEach((message, i) => {
      if (message.role === 'assistant') {
        open = new Set((message.tool_calls ?? []).map((c) => c.id));
        for (const call of message.tool_calls ?? []) {
          if (!isJsonObjectText(call.function.arguments))
            ctx.addIssue({
              code: 'custom',
              path: ['messages', i],
              message: `function.arguments must be a JSON object, got ${call.function.arguments}`,
            });
        }
      } else if (message.role === 'tool') {
        if (!open.has(message.tool_call_id))
          ctx.addIssue({
            code: 'custom',
            path: ['messages', i],
            message: `tool result ${message.tool_call_id} answers no tool call of the assistant turn before it`,
          });
      } else open = new Set();
    });
  });

const anthropicBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string().min(1) }).passthrough(),
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().min(1) }).strict(),
  z.object({ type: z.literal('redacted_thinking'), data: z.string().min(1) }).strict(),
  z
    .object({
      type: z.literal('tool_use'),
      id: z.string().regex(/^[a-zA-Z0-9_-]+$/),
      name: z.string(),
      input: jsonObject,
    })
    .passthrough(),
  z
    .object({
      type: z.literal('tool_result'),
      tool_use_id: z.string(),
      content: z.union([z.string(), z.array(z.unknown())]),
      is_error: z.boolean().optional(),
    })
    .passthrough(),
]);

export const anthropicMessagesRequest = z
  .object({
    model: z.string().min(1),
    max_tokens: z.number().int().positive(),
    stream: z.literal(true),
    system: z
      .union([z.string(), z.array(z.object({ type: z.literal('text'), text: z.string() }).passthrough())])
      .optional(),
    messages: z
      .array(
        z
          .object({
            role: z.enum(['user', 'assistant']),
            content: z.union([z.string().min(1), z.array(anthropicBlock).min(1)]),
          })
          .strict(),
      )
      .min(1),
    tools: z
      .array(z.object({ name: z.string(), description: z.string().optional(), input_schema: jsonObject }).passthrough())
      .optional(),
    tool_choice: z
      .object({
        type: z.enum(['auto', 'any', 'tool', 'none']),
        name: z.string().optional(),
        disable_parallel_tool_use: z.boolean().optional(),
      })
      .strict()
      .optional(),
    temperature: z.number().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    body.messages.forEach((message, i) => {
      if (i === 0 && message.role !== 'user')
        ctx.addIssue({ code: 'custom', path: ['messages', 0], message: 'the first message must be a user message' });
      if (i > 0 && body.messages[i - 1]!.role === message.role)
        ctx.addIssue({ code: 'custom', path: ['messages', i], message: 'roles must alternate' });
      const previous = body.messages[i - 1];
      const uses = new Set(
        Array.isArray(previous?.content) ? previous.content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])) : [],
      );
      for (const block of Array.isArray(message.content) ? message.content : []) {
        if (block.type === 'tool_result' && !uses.has(block.tool_use_id))
          ctx.addIssue({
            code: 'custom',
            path: ['messages', i],
            message: `tool_result ${block.tool_use_id} answers no tool_use of the previous message`,
          });
      }
    });
  });

/** The keys of Gemini's Schema object; anything else in a function's parameters is refused. */
const GEMINI_SCHEMA_KEYS = new Set([
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

export function geminiSchemaViolations(schema: unknown, path = 'parameters'): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (!GEMINI_SCHEMA_KEYS.has(key)) out.push(`${path}.${key}`);
    else if (key === 'properties' && value && typeof value === 'object')
      for (const [name, sub] of Object.entries(value))
        out.push(...geminiSchemaViolations(sub, `${path}.properties.${name}`));
    else if (key === 'items') out.push(...geminiSchemaViolations(value, `${path}.items`));
    else if (key === 'anyOf' && Array.isArray(value))
      value.forEach((sub, k) => out.push(...geminiSchemaViolations(sub, `${path}.anyOf.${k}`)));
  }
  return out;
}

const geminiPart = z.union([
  z.object({ text: z.string(), thought: z.boolean().optional(), thoughtSignature: z.string().optional() }).strict(),
  z
    .object({
      functionCall: z.object({ name: z.string(), args: jsonObject, id: z.string().optional() }).strict(),
      thoughtSignature: z.string().optional(),
    })
    .strict(),
  z
    .object({
      functionResponse: z.object({ name: z.string(), response: jsonObject, id: z.string().optional() }).strict(),
    })
    .strict(),
]);

export const geminiGenerateContentRequest = z
  .object({
    contents: z.array(z.object({ role: z.enum(['user', 'model']), parts: z.array(geminiPart).min(1) }).strict()).min(1),
    systemInstruction: z
      .object({ parts: z.array(z.object({ text: z.string() }).strict()) })
      .passthrough()
      .optional(),
    tools: z
      .array(
        z
          .object({
            functionDeclarations: z.array(
              z.object({ name: z.string(), description: z.string(), parameters: z.unknown().optional() }).strict(),
            ),
          })
          .strict(),
      )
      .optional(),
    toolConfig: z.unknown().optional(),
    generationConfig: z.record(z.string(), z.unknown()).optional(),
    safetySettings: z.unknown().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    for (const declaration of body.tools?.flatMap((t) => t.functionDeclarations) ?? []) {
      for (const key of geminiSchemaViolations(declaration.parameters))
        ctx.addIssue({
          code: 'custom',
          path: ['tools'],
          message: `Invalid JSON payload received. Unknown name "${key}" in ${declaration.name}`,
        });
    }
  });

function isJsonObjectText(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

/** The first problem, as a strict server words its 400. */
export function refusal(result: z.ZodSafeParseResult<unknown>): string | undefined {
  if (result.success) return undefined;
  const issue = result.error.issues[0]!;
  return `${issue.path.join('.')}: ${issue.message}`;
}
