/*
 * Who is connecting, read from the (already authenticated) upgrade request: a client, by
 * default, or a node client with its name — `?role=node&name=worker-1`, or the
 * `x-switchyard-role: node` and `x-switchyard-node-name` headers.
 */
import type { IncomingMessage } from 'node:http';
import { NODE_NAME_HEADER, NODE_ROLE, NodeNameSchema, ROLE_HEADER } from './node-protocol.js';

export type ConnectionRole = { kind: 'client' } | { kind: 'node'; name: string } | { kind: 'refused'; reason: string };

export function connectionRoleOf(req: IncomingMessage): ConnectionRole {
  const query = new URL(req.url ?? '/', 'http://gateway.invalid').searchParams;
  const role = query.get('role') ?? headerOf(req, ROLE_HEADER);
  if (role === undefined || role === '' || role === 'client') return { kind: 'client' };
  if (role !== NODE_ROLE)
    return {
      kind: 'refused',
      reason: `unknown role "${role.slice(0, 50)}"; use role=node for a node client, or no role`,
    };
  const name = query.get('name') ?? headerOf(req, NODE_NAME_HEADER);
  if (name === undefined)
    return { kind: 'refused', reason: `a node needs a name: ?role=node&name=NAME (or the ${NODE_NAME_HEADER} header)` };
  const parsed = NodeNameSchema.safeParse(name);
  if (!parsed.success)
    return {
      kind: 'refused',
      reason: `bad node name ${JSON.stringify(name.slice(0, 80))}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
    };
  return { kind: 'node', name: parsed.data };
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
