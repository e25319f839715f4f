import { describe, expect, it } from 'vitest';
import type { FanOutRequest, StepTarget } from '../src/interpreter/step-types.js';
import { CheckpointCache } from '../src/kernel/checkpoint-cache.js';
import { systemClock } from '../src/kernel/clock.js';
import { FanOutDriver, type ChildStart, type ChildTaker, type FanOutHost } from '../src/kernel/fan-out-driver.js';
import type { LargeValues } from '../src/kernel/large-values.js';
import { childRunId, type NewRun, type RunStore, type StoredRun } from '../src/kernel/run-store.js';
import type { Scheduler } from '../src/kernel/scheduler.js';
import { StepChain } from '../src/kernel/step-chain.js';
import { ChainTurnTaker } from '../src/kernel/turn-taker.js';
import { deferred } from './helpers.js';

// A step starts from a run its driver remembers only if no cancel came after the transition that
// read (or made) that run was sent: the reply can come after the cancel's event, and the cancel
// may be of that very run, whose next step would otherwise run its `exec` though cancelled.

/** A run as a transition's reply brings it (only its identity and step matter here). */
const runOf = (id: string, step = 0): StoredRun => ({ id, step }) as StoredRun;

describe('CheckpointCache: runs read before a cancel', () => {
  it('remembers a run read with no cancel since', () => {
    const cache = new CheckpointCache();
    cache.remember(runOf('r1', 2), cache.cancelsSeen);
    expect(cache.take('r1', 2)).toEqual(runOf('r1', 2));
  });

  it("ignores a run read before a cancel, of any run (the cancel's run is unknown to the read)", () => {
    const cache = new CheckpointCache();
    const seen = cache.cancelsSeen;
    cache.cancelled('other');
    cache.remember(runOf('r1', 2), seen);
    expect(cache.take('r1', 2)).toBeUndefined();
  });

  it('counts forgetting every run as a cancel, and a refused commit not', () => {
    const cache = new CheckpointCache();
    const beforeClear = cache.cancelsSeen;
    cache.clear();
    cache.remember(runOf('r1'), beforeClear);
    expect(cache.take('r1', 0)).toBeUndefined();
    const beforeForget = cache.cancelsSeen;
    cache.forget('r2');
    cache.remember(runOf('r1'), beforeForget);
    expect(cache.take('r1', 0)).toBeDefined();
  });
});

describe('FanOutDriver: children made by a transition a cancel overtook', () => {
  const childTarget: StepTarget = { node: 'child', maxAttempts: 1 };
  const parentId = 'p';
  const parentStep = 1;

  /** A fan-out driver over fakes: the parent's fan-out of runs, and `createChildren` as given. */
  function fanOutDriver(cache: CheckpointCache, createChildren: (indices: readonly number[]) => Promise<StoredRun[]>) {
    const store = {
      fanOutOf: () =>
        Promise.resolve({
          request: { kind: 'runs', flow: 'child', params: [] } as unknown as FanOutRequest,
          total: 10,
          started: 1,
          ended: 1,
          failed: 0,
          step: parentStep,
          flow: 'parent',
          fingerprint: 'f',
          childTarget,
        }),
      snapshotOf: () => Promise.resolve('{}'),
      createChildren: (_parent: string, _step: number, indices: readonly number[]) => createChildren(indices),
    } as unknown as RunStore;
    const scheduler = { addFirstSteps: () => Promise.resolve() } as unknown as Scheduler;
    const values = { inflateOf: (snapshot: string) => Promise.resolve(snapshot) } as unknown as LargeValues;
    const options = { clock: systemClock, maxCheckpointBytes: 1_000_000 };
    return new FanOutDriver(store, scheduler, options, {} as FanOutHost, values, cache);
  }

  /** A chain's taker of the child a child's end makes, made (as the commit is) before it is sent. */
  function takerOf(cache: CheckpointCache, taken: ChildStart[]): ChildTaker {
    return { cancelsSeen: cache.cancelsSeen, runs: () => true, take: (child) => taken.push(child) };
  }

  it("the child made taken with a sibling's end: its first step reads it when a cancel came meanwhile", async () => {
    const cache = new CheckpointCache();
    const fanOut = fanOutDriver(cache, () => Promise.resolve([]));
    const child = runOf(childRunId(parentId, parentStep, 2));
    const taken: ChildStart[] = [];
    const taker = takerOf(cache, taken); // the sibling's end commit is sent
    cache.cancelled(child.id); // the child's cancel event comes before the commit's reply
    await fanOut.followChildEnded(
      parentId,
      parentStep,
      { type: 'recorded', start: { first: 2, count: 1 }, made: child },
      taker,
    );
    expect(taken.map((start) => start.runId)).toEqual([child.id]); // still run here: it reads its run
    expect(cache.take(child.id, 0)).toBeUndefined();
  });

  it('the child made taken with no cancel since starts from its record', async () => {
    const cache = new CheckpointCache();
    const fanOut = fanOutDriver(cache, () => Promise.resolve([]));
    const child = runOf(childRunId(parentId, parentStep, 2));
    const taker = takerOf(cache, []);
    await fanOut.followChildEnded(
      parentId,
      parentStep,
      { type: 'recorded', start: { first: 2, count: 1 }, made: child },
      taker,
    );
    expect(cache.take(child.id, 0)).toBe(child);
  });

  it('children whose records a cancel overtook are read by their first step', async () => {
    const cache = new CheckpointCache();
    const made = deferred<StoredRun[]>();
    const fanOut = fanOutDriver(cache, () => made.promise);
    const child = runOf(childRunId(parentId, parentStep, 3));
    const following = fanOut.followChildEnded(parentId, parentStep, {
      type: 'recorded',
      start: { first: 3, count: 1 },
    });
    await new Promise((resolve) => setImmediate(resolve)); // createChildren is under way
    cache.cancelled(child.id); // its cancel event comes before the records
    made.resolve([child]);
    await following;
    expect(cache.take(child.id, 0)).toBeUndefined();
  });

  it('children made with no cancel meanwhile start from their records', async () => {
    const cache = new CheckpointCache();
    const child = runOf(childRunId(parentId, parentStep, 3));
    const fanOut = fanOutDriver(cache, () => Promise.resolve([child]));
    await fanOut.followChildEnded(parentId, parentStep, { type: 'recorded', start: { first: 3, count: 1 } });
    expect(cache.take(child.id, 0)).toBe(child);
  });
});

describe("ChainTurnTaker: an agent's next turn made by a transition a cancel overtook", () => {
  const target: StepTarget = { node: 'turn', maxAttempts: 1 };
  const turn: NewRun = { id: 't1', flow: 'turn', fingerprint: 'f', checkpoint: '{}', target, now: 0, takenBy: 'w1' };

  function chainOnQueueOf(target: StepTarget): StepChain {
    const chain = new StepChain(10, Number.MAX_SAFE_INTEGER);
    chain.queue = target.queue ?? 'default';
    return chain;
  }

  it('its first step reads the run when a cancel came after the taker was made', () => {
    const cache = new CheckpointCache();
    const chain = chainOnQueueOf(target);
    const taker = new ChainTurnTaker('w1', chain, cache); // before the turn commit is sent
    expect(taker.claim(target)).toBe(true);
    cache.cancelled(turn.id); // the new turn's cancel event comes before the commit's reply
    taker.take(turn);
    expect(chain.children.map((child) => child.runId)).toEqual([turn.id]); // still run here: it reads its run
    expect(cache.take(turn.id, 0)).toBeUndefined();
  });

  it('its first step starts from the record with no cancel since', () => {
    const cache = new CheckpointCache();
    const chain = chainOnQueueOf(target);
    const taker = new ChainTurnTaker('w1', chain, cache);
    expect(taker.claim(target)).toBe(true);
    taker.take(turn);
    expect(cache.take(turn.id, 0)).toMatchObject({ id: turn.id, step: 0, status: 'running' });
  });
});
