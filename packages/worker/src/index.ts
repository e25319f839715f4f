export { RedisEngine, type RedisEngineOptions } from './redis-engine.js';
export { startWorker, type WorkerOptions, type QueueflowWorker } from './worker.js';
export type { ConnectionOption } from './connection.js';
export type { StoreSettings } from './store-settings.js';
export { RedisKeys } from './redis-keys.js';
export { RedisRunStore } from './redis-run-store.js';
export { RedisRunEvents } from './redis-run-events.js';
export { withScripts } from './scripts.js';
export { loadFlows } from './load-flows.js';
