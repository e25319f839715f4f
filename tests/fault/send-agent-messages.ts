/**
 * A sender process of the agent fault tests: sends `count` messages numbered from `first` to one
 * `tally` key as fast as it can, with an engine that knows the type (so it activates the key
 * itself, racing the other senders). Arguments: redis URL, prefix, key, first, count.
 */
import { RedisEngine } from '@queueflow/worker';
import { tally } from './agent-flows.js';

const [url, prefix, key, first, count] = process.argv.slice(2);
const engine = new RedisEngine({ connection: url!, prefix: prefix!, flows: [], agents: [tally] });
try {
  for (let i = 0; i < Number(count); i++) await engine.send(tally.ref(key!), { n: Number(first) + i });
} finally {
  await engine.close();
}
