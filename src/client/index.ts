export { connect } from './client.js';
export type {
  BatchCall,
  BatchOutcome,
  BatchOutcomes,
  ConnectOptions,
  EventSubscription,
  SubscribeFilter,
  SwitchyardClient,
  WebSocketConstructor,
  WebSocketLike,
} from './client.js';
export { ClientError, CONNECTION_CLOSED } from './client-error.js';
