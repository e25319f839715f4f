import { describe, expect, it } from 'vitest';
import type { LoadedRun } from '../src/kernel/run-store.js';
import { StepChain, wakeTaskOf } from '../src/kernel/step-chain.js';

/** A run as a transition read it for a wake it took (only its identity matters here). */
const run = { id: 'r1', step: 3 } as LoadedRun;
const wakeId = 'r1-3-p1';

describe('StepChain: the runs of taken wakes', () => {
  it('gives the run read with the wake, once', () => {
    const chain = new StepChain(10, Number.MAX_SAFE_INTEGER);
    chain.take(wakeId, run, 0);
    expect(chain.taken).toEqual([wakeId]);
    expect(chain.takenRunOf(wakeTaskOf(wakeId)!, 0)).toBe(run);
    expect(chain.takenRunOf(wakeTaskOf(wakeId)!, 0)).toBeUndefined();
  });

  it('gives no run once the driver has seen a cancel since the read: the step reads it again', () => {
    const chain = new StepChain(10, Number.MAX_SAFE_INTEGER);
    chain.take(wakeId, run, 4);
    expect(chain.takenRunOf(wakeTaskOf(wakeId)!, 5)).toBeUndefined();
    expect(chain.takenRunOf(wakeTaskOf(wakeId)!, 4)).toBeUndefined(); // dropped either way
  });
});
