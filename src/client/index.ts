export { connect } from './client.js';
export type { ConnectOptions, EventSubscription, SubscribeFilter, SwitchyardClient, WebSocketConstructor, WebSocketLike } from './client.js';
export { ClientError, CONNECTION_CLOSED } from './client-error.js';
