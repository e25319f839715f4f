/**
 * A worker fenced while it holds the lock of a job: taken out of the worker registry (as a
 * survivor does to a worker whose heartbeat lapsed) after it took a step, but with nobody to hand
 * that step's job back. It happens when a paused worker resumes: its main loop takes jobs for a
 * moment before its heartbeat tells it it was claimed. The fenced worker stops the step and drops
 * its result; the job must go back to the queue, not be completed by BullMQ with no step
 * committed (the run then waited for good: CI's paused-worker test, 893 of 900 children ended).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { Partitions, RedisEngine, RedisRunStore, startWorker, withScripts } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';

/** Opened by the test: the step's first try waits for it, whatever its signal says. */
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => (openGate = resolve));
let tries = 0;

type S = { tries?: number };
class Held extends Node<S> {
  override async exec(): Promise<number> {
    tries++;
    await gate;
    return tries;
  }
  override post(shared: S, _prep: unknown, tried: number): undefined {
    shared.tries = tried;
    return undefined;
  }
}
const held = defineFlow('fenced-held', () => new Flow(new Held({ name: 'held' })));

describe('fault: a worker fenced while it holds the lock of its step', () => {
  const prefix = testPrefix('fenced-worker');
  const redis = new Redis(redisUrl());
  const engine = new RedisEngine({ connection: redisUrl(), flows: [held], prefix });
  afterAll(async () => {
    await engine.close();
    redis.disconnect();
    await deletePrefix(redisUrl(), prefix);
  });

  it('puts the job back in the queue; the step runs again and the run completes', async () => {
    const logs: string[] = [];
    const worker = await startWorker({
      connection: redisUrl(),
      flows: [held],
      prefix,
      concurrency: 2,
      onLog: (line) => logs.push(line),
    });
    try {
      const handle = await engine.start(held, {} as S);
      const running = await waitFor('the worker to run the step', async () =>
        (await engine.workers()).find((each) => each.active > 0),
      );
      const store = new RedisRunStore(withScripts(redis), new Partitions(prefix, 1), {
        retentionSeconds: 60,
        maxErrors: 10,
        maxStepRecords: 10,
      });
      await store.removeWorker(running!.id);
      await waitFor('the worker to fence itself', () => logs.some((line) => line.includes('rejoined as')), {
        timeoutMs: 15_000,
      });
      expect(logs.find((line) => line.startsWith('fenced:'))).toContain('stopped the 1 step(s)');
      openGate();
      const result = await handle.result({ timeoutMs: 15_000 });
      expect(result.status, JSON.stringify(result.error)).toBe('completed');
      // The first try's result was dropped; the second try's committed.
      expect(result.shared.tries).toBe(2);
    } finally {
      openGate();
      await worker.close();
    }
  }, 60_000);
});
