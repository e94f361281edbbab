export { switchyardAgent } from './agent.js';
export type { AgentOptions } from './agent.js';
export type { AcpBackend, SessionFeed, StoredSession } from './backend.js';
export { engineBackend } from './engine-backend.js';
export type { EngineBackendOptions } from './engine-backend.js';
export { gatewayBackend } from './gateway-backend.js';
export { SESSION_MODES } from './session-modes.js';
export { PERMISSION_OPTIONS } from './permissions.js';
