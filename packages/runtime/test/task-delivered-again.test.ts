/**
 * The step driver starts a run's next step from the state it committed itself (CheckpointCache),
 * with no read. A task the scheduler hands out again (a retry, a deferral, a takeover:
 * `TaskDelivery.again`) reads its run all the same: the driver may remember the step it committed
 * before another worker took the task and lost it, and the store's note of that takeover
 * (RunStore.noteTakeover: the run's `taken-over` event) comes with the read. A driver that started
 * such a task from memory logged no takeover.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '../src/index.js';
import {
  FlowRegistry,
  MemoryRunStore,
  StepDriver,
  prepareRun,
  startRun,
  systemClock,
  type Scheduler,
  type StepTask,
} from '../src/kernel.js';

const twoSteps = defineFlow('two-steps', () => {
  const first = new Node({ name: 'first' });
  first.next(new Node({ name: 'second' }));
  return new Flow(first);
});

/** A driver over a memory store whose reads for a step are counted, and a run it committed the first step of. */
async function afterFirstStep(): Promise<{ driver: StepDriver; runId: string; reads: string[] }> {
  const store = new MemoryRunStore(systemClock, 100, 100);
  const reads: string[] = [];
  const loadForStep = store.loadForStep.bind(store);
  store.loadForStep = (runId, ...rest) => {
    reads.push(runId);
    return loadForStep(runId, ...rest);
  };
  // Only what a step that commits, adds the next one and wakes nobody asks for.
  const scheduler = { addStep: async () => {}, promote: async () => {} } as unknown as Scheduler;
  const registry = new FlowRegistry([twoSteps]);
  const settings = { clock: systemClock, maxCheckpointBytes: 1_000_000 };
  const { runId } = await startRun(store, scheduler, prepareRun(registry, twoSteps, {}, {}, settings), Date.now());
  const driver = new StepDriver(store, scheduler, registry, {
    ...settings,
    refusalDelayMs: 1000,
    parkRecheckMs: Infinity,
    workerId: 'w1',
  });
  await driver.run({ type: 'step', runId, step: 0 }, 0);
  reads.length = 0;
  return { driver, runId, reads };
}

describe('a task handed out again', () => {
  it('the next step of a run the driver committed starts from memory the first time', async () => {
    const { driver, runId, reads } = await afterFirstStep();
    const second: StepTask = { type: 'step', runId, step: 1 };
    expect(await driver.run(second, 0)).toEqual({ type: 'done' });
    expect(reads).toEqual([]);
  });

  it('reads its run from the store, though the driver remembers the step', async () => {
    const { driver, runId, reads } = await afterFirstStep();
    const second: StepTask = { type: 'step', runId, step: 1 };
    expect(await driver.run(second, 0, undefined, { again: true })).toEqual({ type: 'done' });
    expect(reads).toEqual([runId]);
  });
});
