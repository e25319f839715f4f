import { FanOutStore } from './fan-out-store.js';
import { MailboxStore } from './mailbox-store.js';
import type { RedisKeys } from './redis-keys.js';
import { RunStore } from './run-store.js';
import type { StoreOptions } from './script-replies.js';
import { withScripts } from './scripts.js';
import type { Redis } from 'ioredis';

/** Everything a client or a worker reads and writes in Redis, over one connection. */
export interface Stores {
  runs: RunStore;
  fanOuts: FanOutStore;
  mailboxes: MailboxStore;
}

export function createStores(redis: Redis, keys: RedisKeys, options: StoreOptions): Stores {
  const scripted = withScripts(redis);
  const runs = new RunStore(scripted, keys, options);
  return {
    runs,
    fanOuts: new FanOutStore(scripted, keys, options, runs),
    mailboxes: new MailboxStore(scripted, keys, options),
  };
}
