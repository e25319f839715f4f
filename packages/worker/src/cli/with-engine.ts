import type { FlowDefinition } from '@queueflow/runtime';
import { RedisEngine } from '../redis-engine.js';
import { connectionOf, type ConnectionFlags } from './options.js';

// Apart from options.ts, and imported by each command's action: the engine's modules (bullmq,
// ioredis) load only when a command talks to Redis, not for `--help` or an argument refused.

/** A client engine for a command that needs no flows, or the given ones. */
function openEngine(options: ConnectionFlags, flows: FlowDefinition[] = []): RedisEngine {
  return new RedisEngine({ connection: connectionOf(options), flows, prefix: options.prefix });
}

/** Runs `body` with an engine client, closing it afterwards whatever happens. */
export async function withEngine<T>(
  options: ConnectionFlags,
  body: (engine: RedisEngine) => Promise<T>,
  flows: FlowDefinition[] = [],
): Promise<T> {
  const engine = openEngine(options, flows);
  try {
    return await body(engine);
  } finally {
    await engine.close();
  }
}
