/**
 * `npm start`: starts a run of the flow on Redis and waits for it; a worker (`npm run worker`,
 * same Redis and prefix) takes its steps. `npm start -- --name Ada --prefix '{my-app}'`.
 * Redis: `--redis`, else REDIS_URL, else redis://127.0.0.1:6379.
 */
import { parseArgs } from 'node:util';
import { RedisEngine } from '@queueflow/worker';
import { hello, type HelloShared } from './flows.js';

const { values } = parseArgs({
  options: {
    name: { type: 'string', default: 'world' },
    redis: { type: 'string', default: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
    prefix: { type: 'string', default: '{qf}' }, // the worker's --prefix (queueflow's default)
  },
});

const engine = new RedisEngine({ connection: values.redis, flows: [hello], prefix: values.prefix });
try {
  const shared: HelloShared = { name: values.name };
  const handle = await engine.start(hello, shared);
  console.error(`run ${handle.id} started; waiting for a worker to run it (npm run worker)...`);
  const result = await handle.result();
  console.log(JSON.stringify(result, null, 2));
  process.exitCode = result.status === 'completed' ? 0 : 1;
} finally {
  await engine.close();
}
