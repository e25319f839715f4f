/**
 * Fault (a newcomer's probe): a worker runs a chain of taken children, each of three steps, and
 * is SIGKILLed inside the second step of the third child (taken by the second's end, itself
 * taken by the first's). The survivor resumes that child at its step, then runs the others;
 * every child's steps merge once, in order.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { reviewLanesSteps } from '../fan-out/taken-chain-flows.js';

const FLOWS = fileURLToPath(new URL('../fan-out/taken-chain-flows.ts', import.meta.url));

describe('fault: SIGKILL inside a multi-step taken child', () => {
  const { engine, markerDir, marker, spawn } = useKillHarness('review-taken-chain', [reviewLanesSteps]);

  it('the survivor resumes the child at its step; every step merged once, in order', async () => {
    const workers = await spawn(2, { flows: FLOWS, concurrency: 2, lockDurationMs: 3000, stalledIntervalMs: 1000 });
    const run = await engine.start(reviewLanesSteps, {}, { params: { markerDir } });

    const victimPid = Number(await waitFor('child 2 step b to start', () => marker('b2-first')));
    const victim = workers.find((worker) => worker.pid === victimPid)!;
    expect(victim, `the worker running child 2 (pid ${victimPid})`).toBeDefined();
    victim.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    const survivor = workers.find((worker) => worker !== victim)!;

    const result = await run.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(Number(marker('b2-again'))).toBe(survivor.pid);
    const log = (result.shared as { log: string[] }).log;
    expect(log).toEqual([0, 1, 2, 3, 4].flatMap((i) => [`${i}a`, `${i}b`, `${i}c`]));
  }, 120_000);
});
