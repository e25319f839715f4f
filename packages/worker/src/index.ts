export { RedisEngine, type RedisEngineOptions } from './redis-engine.js';
export { startWorker, type WorkerOptions, type QueueflowWorker } from './worker.js';
export type { ConnectionOption } from './connection.js';
export type { StoreSettings } from './store-settings.js';
export { RedisKeys } from './redis-keys.js';
export { loadFlows } from './load-flows.js';
export { createStudioHandler, type StudioHandler, type StudioHandlerOptions } from './studio/create-studio-handler.js';
export type { StudioEngine } from './studio/studio-engine.js';
export type { StudioLiveOptions } from './studio/studio-live.js';
