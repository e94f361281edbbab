export { inspectorRoutes } from './inspector-routes.js';
export type { InspectorRouteHandler } from './inspector-routes.js';
