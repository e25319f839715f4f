/**
 * Fault: a worker runs a fan-out child that a sibling's end started and that it took to run in
 * the sibling's slot (StepChain.children, ChildEndReport.take), and is SIGKILLed there. The taken
 * child has no task of its own in BullMQ; the survivor that takes the dead worker over starts
 * it, from the dead worker's set of taken tasks (RunStore.createChildren with `takenBy`). The
 * fan-out completes with each child's result merged once, and the survivor's log line names the
 * child's first step.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { childRunId } from '@queueflow/runtime/kernel';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { opsLanes } from '../ops/ops-flows.js';

const FLOWS = fileURLToPath(new URL('../ops/ops-flows.ts', import.meta.url));

describe('fault: SIGKILL the worker running a fan-out child it took', () => {
  const { engine, markerDir, marker, spawn } = useKillHarness('taken-child', [opsLanes]);

  it('the survivor starts the taken child; every child merged once', async () => {
    const workers = await spawn(2, { flows: FLOWS, concurrency: 2 });
    const run = await engine.start(opsLanes, {}, { params: { markerDir } });

    // Child 0 runs as a task; its end starts child 1 (one at a time) in the same slot.
    const victimPid = Number(await waitFor('child 1 to start', () => marker('lane-first')));
    const victim = workers.find((worker) => worker.pid === victimPid);
    expect(victim, `the worker running child 1 (pid ${victimPid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');
    const survivor = workers.find((worker) => worker !== victim)!;

    const result = await run.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(Number(marker('lane-again'))).toBe(survivor.pid);
    expect([...(result.shared as { done: number[] }).done].sort()).toEqual([0, 1, 2]);
    const child = childRunId(run.id, 1, 1);
    expect(survivor.output()).toContain(`made due 1 task(s) it had taken: ${child}-0`);
  }, 120_000);
});
