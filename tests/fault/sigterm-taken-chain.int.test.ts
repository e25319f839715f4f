/**
 * A newcomer's probe: SIGTERM (graceful stop) of the worker process running a chain of taken
 * children (one at a time); the other worker runs the rest; each child merged once, in order.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { reviewLanesSlow } from '../fan-out/taken-chain-flows.js';

const FLOWS = fileURLToPath(new URL('../fan-out/taken-chain-flows.ts', import.meta.url));

describe('SIGTERM the worker running taken children', () => {
  const { engine, markerDir, marker, spawn } = useKillHarness('review-sigterm-chain', [reviewLanesSlow]);

  it('the other worker finishes the fan-out; each child merged once, in order', async () => {
    const workers = await spawn(2, { flows: FLOWS, concurrency: 2 });
    const run = await engine.start(reviewLanesSlow, {}, { params: { markerDir } });
    const pid = Number(await waitFor('child 2 to start', () => marker('started-2')));
    const stopping = workers.find((worker) => worker.pid === pid)!;
    expect(stopping, `the worker running child 2 (pid ${pid})`).toBeDefined();
    stopping.kill('SIGTERM');
    expect(await stopping.exited).toBe(0);
    const result = await run.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect((result.shared as { log: string[] }).log).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
  }, 120_000);
});
