import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchFlow, BatchNode, defineFlow, Flow, Node, ParallelBatchFlow, ParallelBatchNode } from '@queueflow/runtime';
import { RedisEngine, startWorker, type QueueflowWorker } from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';

type S = Record<string, any>;

class Inc extends Node<S> {
  override post(shared: S): string | undefined {
    shared.n = (shared.n ?? 0) + 1;
    return shared.n < 5 ? 'again' : 'done';
  }
}
class Items extends BatchNode<S> {
  override prep(): number[] { return [1, 2, 3]; }
  override exec(x: number): number { return x * 2; }
  override post(shared: S, _p: unknown, r: number[]): void { shared.doubled = r; }
}
class PItems extends ParallelBatchNode<S> {
  override prep(): number[] { return [1, 2, 3]; }
  override exec(x: number): number { return x * 10; }
  override post(shared: S, _p: unknown, r: number[]): void { shared.tens = r; }
}
class Write extends Node<S> {
  override post(shared: S): void { shared.results ??= {}; shared.results[this.params.key as string] = this.params.v; }
}
class Keys extends BatchFlow<S> { override prep(): object[] { return [{ key: 'a', v: 1 }, { key: 'b', v: 2 }]; } }
class PKeys extends ParallelBatchFlow<S> { override prep(): object[] { return [{ key: 'c', v: 3 }, { key: 'd', v: 4 }]; } }
const build = () => {
  const inc = new Inc();
  const items = new Items();
  inc.on('again', inc).on('done', items);
  items.next(new PItems()).next(new Keys(new Write())).next(new PKeys(new Write())).next(new Flow(new Items()));
  return new Flow(inc);
};
const smoke = defineFlow('smoke', build);

describe('RedisEngine smoke', () => {
  const prefix = testPrefix('smoke');
  let worker: QueueflowWorker;
  let engine: RedisEngine;
  beforeAll(async () => {
    worker = await startWorker({ connection: redisUrl(), flows: [smoke], prefix, concurrency: 4 });
    engine = new RedisEngine({ connection: redisUrl(), flows: [smoke], prefix });
  });
  afterAll(async () => {
    await engine.close();
    await worker.close();
    await deletePrefix(redisUrl(), prefix);
  });

  it('gives the same shared as flow.run', async () => {
    const expected: S = {};
    await build().run(expected);
    const result = await engine.run('smoke', {});
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toEqual(expected);
    const info = await engine.get(result.id);
    expect(info?.status).toBe('completed');
  });
});
