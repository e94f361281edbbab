/*
 * What the gateway and a node client (`switchyard node`; docs/protocol.md, "Node clients") say to
 * each other, in the gateway's JSON-RPC 2.0 framing but in the other direction: the server sends
 * `node.invoke` requests (with an id) and `node.cancel` / `node.registered` notifications; the node
 * answers each request with a result or an error frame. Every frame is validated with these schemas
 * on the side that receives it.
 */
import { z } from 'zod';
import type { NodeCommand, NodeInvokeResult } from '../../tools/node-invoker.js';
import { RequestIdSchema } from '../protocol.js';

/** How a connection says it is a node: `?role=node&name=NAME`, or these headers. */
export const NODE_ROLE = 'node';
export const ROLE_HEADER = 'x-switchyard-role';
export const NODE_NAME_HEADER = 'x-switchyard-node-name';

export const NodeNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a node name is 1-64 letters, digits, "_", "." or "-"');

export const NodeInvokeParamsSchema = z
  .object({
    invocationId: z.string().min(1).max(200),
    command: z.string().min(1),
    /** Relative to the node's workspace; must stay inside it. */
    cwd: z.string().optional(),
    timeoutMs: z.number().int().positive(),
    /** Output budget of the command (stdout, stderr, interleaved, each). Default 1 MiB. */
    maxOutputBytes: z.number().int().positive().optional(),
  })
  .strict();
export type NodeInvokeParams = z.infer<typeof NodeInvokeParamsSchema>;

export type { NodeCommand, NodeInvoker, NodeInvokeResult } from '../../tools/node-invoker.js';

export const NodeInvokeResultSchema = z
  .object({
    exitCode: z.number().int().nullable(),
    signal: z.string().nullable(),
    output: z.string(),
    truncated: z.boolean(),
    timedOut: z.boolean(),
    /** The node aborted the command on a node.cancel (or because it is shutting down). */
    cancelled: z.boolean().optional(),
    durationMs: z.number().nonnegative(),
    sandbox: z.enum(['bwrap', 'none']).optional(),
  })
  .strict();
/** The port's types and the wire schemas must say the same thing; this fails to compile if not. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const portMatchesWire: [
  Same<NodeCommand, Omit<NodeInvokeParams, 'invocationId'>>,
  Same<NodeInvokeResult, z.infer<typeof NodeInvokeResultSchema>>,
] = [true, true];
void portMatchesWire;

export const NodeCancelParamsSchema = z.object({ invocationId: z.string().min(1).max(200) }).strict();

export const NodeRegisteredParamsSchema = z
  .object({
    name: NodeNameSchema,
    /** The largest frame the gateway accepts: a node cuts a bigger answer's output to fit. */
    maxPayloadBytes: z.number().int().positive(),
  })
  .strict();
export type NodeRegisteredParams = z.infer<typeof NodeRegisteredParamsSchema>;

const ErrorBodySchema = z
  .object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() })
  .strict();

/** node -> server: the answer to one node.invoke request. */
export const NodeAnswerFrameSchema = z.union([
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema, result: z.unknown() }).strict(),
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema.nullable(), error: ErrorBodySchema }).strict(),
]);
export type NodeAnswerFrame = z.infer<typeof NodeAnswerFrameSchema>;

/** server -> node: a request, a notification, or an error about a frame the node sent. */
export const NodeServerFrameSchema = z.union([
  z
    .object({
      jsonrpc: z.literal('2.0'),
      id: RequestIdSchema,
      method: z.literal('node.invoke'),
      params: NodeInvokeParamsSchema,
    })
    .strict(),
  z.object({ jsonrpc: z.literal('2.0'), method: z.literal('node.cancel'), params: NodeCancelParamsSchema }).strict(),
  z
    .object({ jsonrpc: z.literal('2.0'), method: z.literal('node.registered'), params: NodeRegisteredParamsSchema })
    .strict(),
  z.object({ jsonrpc: z.literal('2.0'), id: RequestIdSchema.nullable(), error: ErrorBodySchema }).strict(),
]);
export type NodeServerFrame = z.infer<typeof NodeServerFrameSchema>;
