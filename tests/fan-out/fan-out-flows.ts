/**
 * Flows for the fan-out tests that run on worker processes (issue 4). Worker processes load this
 * module, so it exports FlowDefinitions and plain helpers only.
 *
 * Node code reports to the test through Redis (the processes share nothing else): every flow
 * takes `probeUrl` (the suite's Redis) and `probeKey` (a key under the test's prefix) as run
 * params, and writes what the test wants to see under `<probeKey>:…`. Each process opens one
 * connection per URL, on first use.
 */
import { Redis } from 'ioredis';
import {
  defineFlow,
  Flow,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type ItemOutcome,
  type JsonObject,
} from '@queueflow/runtime';

type Shared = Record<string, any>;

/** The run params every flow here takes. */
export interface ProbeParams {
  probeUrl: string;
  probeKey: string;
  [key: string]: unknown;
}

const connections = new Map<string, Redis>();

/** This process's connection to `url` (opened on first use, kept for the process's life). */
export function probe(url: string): Redis {
  let redis = connections.get(url);
  if (!redis) {
    redis = new Redis(url, { maxRetriesPerRequest: 3 });
    redis.on('error', () => {});
    connections.set(url, redis);
  }
  return redis;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `{ key }` per entry of `shared.keys`. */
function perKey(shared: Shared): JsonObject[] {
  return (shared.keys as string[]).map((key) => ({ key }));
}

// ---------------------------------------------------------------------------------------------
// Spread: each child reports the pid of the process that ran it; the fan-in `post` counts its
// runs in Redis (`<probeKey>:posts`) and notes how many children's results it saw.

class ReportPid extends Node<Shared, ProbeParams> {
  override async exec(): Promise<number> {
    await delay(Number(this.params.holdMs ?? 0));
    return process.pid;
  }
  override post(shared: Shared, _prepRes: unknown, pid: number): void {
    (shared.pids ??= {})[this.params.key as string] = pid;
  }
}

class Gather extends ParallelBatchFlow<Shared, ProbeParams> {
  override prep(shared: Shared): JsonObject[] {
    return perKey(shared);
  }
  override async post(shared: Shared): Promise<string> {
    await probe(this.params.probeUrl).incr(`${this.params.probeKey}:posts`);
    shared.resultsSeenByPost = Object.keys(shared.pids ?? {}).length;
    return 'gathered';
  }
}

export const spread = defineFlow(
  'fo-spread',
  () => new Gather(new ReportPid({ name: 'report-pid' }), { name: 'gather' }),
);

// ---------------------------------------------------------------------------------------------
// Items: a ParallelBatchNode whose item `n` fails its first `n % 3` tries. Every try is logged
// to `<probeKey>:tries` as JSON `{ item, attempt, at, pid }`.

/** Tries of `exec` per item: 3; exponential backoff from 50 ms (50 ms, then 100 ms). */
export const ITEM_TRIES = { maxRetries: 3, waitMs: 50 } as const;

class Tries extends ParallelBatchNode<Shared, ProbeParams> {
  constructor() {
    super({
      name: 'tries',
      maxRetries: ITEM_TRIES.maxRetries,
      wait: ITEM_TRIES.waitMs / 1000,
      backoff: { type: 'exponential' },
    });
  }
  override prep(shared: Shared): number[] {
    return shared.items as number[];
  }
  override async exec(item: number): Promise<JsonObject> {
    const attempt = this.currentRetry;
    const entry = { item, attempt, at: Date.now(), pid: process.pid };
    await probe(this.params.probeUrl).rpush(`${this.params.probeKey}:tries`, JSON.stringify(entry));
    if (attempt < item % 3) throw new Error(`item ${item} fails try ${attempt}`);
    await delay(30);
    return { item, attempt, pid: process.pid };
  }
  override post(shared: Shared, _items: unknown, results: JsonObject[]): string {
    shared.results = results;
    return 'tried';
  }
}

export const items = defineFlow('fo-items', () => new Flow(new Tries()));

// ---------------------------------------------------------------------------------------------
// Limits: children count themselves in and out of `<probeKey>:now` and keep the highest count in
// `<probeKey>:max`. To make "the limit was reached" deterministic, a child that finds the highest
// count still below `limit` waits (up to 3 s after the first child started) for it to get
// there, then holds its slot `holdMs` more.

/** Most children ever in flight for one fan-out, as the test's counter saw them. */
export const LIMIT = 3;

const ENTER = `
local now = redis.call('INCR', KEYS[1])
local max = tonumber(redis.call('GET', KEYS[2]) or '0')
if now > max then redis.call('SET', KEYS[2], now) end
redis.call('SET', KEYS[3], ARGV[1], 'NX')
return now`;

async function countedWork(params: ProbeParams): Promise<number> {
  const redis = probe(params.probeUrl);
  const key = params.probeKey;
  await redis.eval(ENTER, 3, `${key}:now`, `${key}:max`, `${key}:t0`, Date.now());
  const deadline = Number(await redis.get(`${key}:t0`)) + 3000;
  while (Number(await redis.get(`${key}:max`)) < LIMIT && Date.now() < deadline) await delay(5);
  await delay(Number(params.holdMs ?? 20));
  await redis.decr(`${key}:now`);
  return process.pid;
}

class CountedChild extends Node<Shared, ProbeParams> {
  override exec(): Promise<number> {
    return countedWork(this.params);
  }
  override post(shared: Shared, _prepRes: unknown, pid: number): void {
    (shared.pids ??= {})[this.params.key as string] = pid;
  }
}

class LimitedKeys extends ParallelBatchFlow<Shared, ProbeParams> {
  override prep(shared: Shared): JsonObject[] {
    return perKey(shared);
  }
}

export const limitedFlow = defineFlow(
  'fo-limited-flow',
  () => new LimitedKeys(new CountedChild({ name: 'counted-child' }), { name: 'limited-keys', concurrency: LIMIT }),
);

class CountedItems extends ParallelBatchNode<Shared, ProbeParams> {
  constructor() {
    super({ name: 'counted-items', concurrency: LIMIT });
  }
  override prep(shared: Shared): string[] {
    return shared.keys as string[];
  }
  override exec(): Promise<number> {
    return countedWork(this.params);
  }
  override post(shared: Shared, _items: unknown, pids: number[]): void {
    shared.pids = pids;
  }
}

export const limitedNode = defineFlow('fo-limited-node', () => new Flow(new CountedItems()));

// ---------------------------------------------------------------------------------------------
// Thousands: `shared.n` children, each appending its key to `shared.keys`. Each exec counts
// itself in `<probeKey>:execs` (hash: key → tries) and writes its pid to `<probeKey>:current`,
// so a test knows which process is running children right now.

/** Key of child `i` (zero-padded, so sorted keys are in param-set order). */
export function childKey(i: number): string {
  return `c${String(i).padStart(4, '0')}`;
}

class AppendKey extends Node<Shared, ProbeParams> {
  override async exec(): Promise<string> {
    const key = this.params.key as string;
    const redis = probe(this.params.probeUrl);
    await redis
      .multi()
      .set(`${this.params.probeKey}:current`, String(process.pid))
      .hincrby(`${this.params.probeKey}:execs`, key, 1)
      .exec();
    await delay(Number(this.params.holdMs ?? 0));
    return key;
  }
  override post(shared: Shared, _prepRes: unknown, key: string): void {
    (shared.keys as string[]).push(key);
  }
}

class Thousands extends ParallelBatchFlow<Shared, ProbeParams> {
  override prep(shared: Shared): JsonObject[] {
    return Array.from({ length: shared.n as number }, (_, i) => ({ key: childKey(i) }));
  }
}

export const thousands = defineFlow(
  'fo-thousands',
  () => new Thousands(new AppendKey({ name: 'append-key' }), { name: 'thousands' }),
);

// ---------------------------------------------------------------------------------------------
// Stalls: the child (or item) whose key is `params.hangKey` logs its pid to `<probeKey>:hang`
// and never finishes: only killing its process ends that try, and the job stalls.

async function maybeHang(key: string, params: ProbeParams): Promise<string> {
  if (key === params.hangKey) {
    await probe(params.probeUrl).rpush(`${params.probeKey}:hang`, String(process.pid));
    return new Promise<never>(() => {});
  }
  return key;
}

class MaybeHang extends Node<Shared, ProbeParams> {
  override exec(): Promise<string> {
    return maybeHang(this.params.key as string, this.params);
  }
  override post(shared: Shared, _prepRes: unknown, key: string): string {
    (shared.done ??= {})[key] = true;
    return `ok-${key}`;
  }
}

class StallKeys extends ParallelBatchFlow<Shared, ProbeParams> {
  override prep(shared: Shared): JsonObject[] {
    return perKey(shared);
  }
  override post(shared: Shared, _list: unknown, outcomes: ItemOutcome[] | undefined): string {
    if (outcomes) shared.outcomes = outcomes;
    return 'fanned-in';
  }
}

class StallItems extends ParallelBatchNode<Shared, ProbeParams> {
  constructor() {
    super({ name: 'stall-items', onItemError: 'collect' });
  }
  override prep(shared: Shared): string[] {
    return shared.keys as string[];
  }
  override exec(key: string): Promise<string> {
    return maybeHang(key, this.params);
  }
  override post(shared: Shared, _items: unknown, outcomes: ItemOutcome[]): string {
    shared.outcomes = outcomes;
    return 'collected';
  }
}

export const stallFailFast = defineFlow(
  'fo-stall-fail-fast',
  () => new StallKeys(new MaybeHang({ name: 'maybe-hang' }), { name: 'stall-keys' }),
);
export const stallCollectFlow = defineFlow(
  'fo-stall-collect-flow',
  () => new StallKeys(new MaybeHang({ name: 'maybe-hang' }), { name: 'stall-keys', onItemError: 'collect' }),
);
export const stallCollectItems = defineFlow('fo-stall-collect-items', () => new Flow(new StallItems()));
