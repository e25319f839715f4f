/**
 * Fault: the worker holding a concurrency slot is paused (SIGSTOP) past the heartbeat lapse. It is
 * taken over, but it is not known dead (its process exists on this host), so its slot stays its
 * own: the run waiting for the slot stays throttled (before, the lease lapsed and a third request
 * went out). When the worker comes back, it fences itself and gives the slot back; both runs
 * complete. (sigkill-budget.int.test.ts: a killed holder's slot comes back at the takeover.)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { hog } from './limits-flows.js';

const FLOWS = fileURLToPath(new URL('./limits-flows.ts', import.meta.url));

describe('fault: SIGSTOP the worker holding a concurrency slot', () => {
  const harness = useKillHarness('sigstop-budget', [hog]);

  it('keeps the slot while the holder is paused; gives it back when the holder fences itself', async () => {
    const workers = await harness.spawn(2, { flows: FLOWS, concurrency: 2 });
    const { engine, markerDir } = harness;
    const holding = await engine.start(hog, {}, { params: { markerDir } });
    await waitFor('a worker to hold the slot', () => existsSync(join(markerDir, 'holder')));
    const pid = Number(readFileSync(join(markerDir, 'holder'), 'utf8'));
    const victim = workers.find((w) => w.pid === pid)!;
    const survivor = workers.find((w) => w !== victim)!;
    const waiting = await engine.start(hog, {}, { params: { markerDir } });
    await waitFor('the second run throttled', async () => (await engine.get(waiting.id))?.status === 'throttled');
    victim.kill('SIGSTOP');
    await waitFor(
      'the survivor to take the paused holder over',
      () => survivor.output().includes(`pid ${pid}) stopped heartbeating`),
      { timeoutMs: 30_000 },
    );
    expect(survivor.output(), victim.output()).toContain('budget slot(s) stay its own');
    // A beat later the slot is still the paused worker's.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await engine.get(waiting.id))?.status).toBe('throttled');

    victim.kill('SIGCONT');
    await waitFor('the holder to fence itself', () => victim.output().includes('rejoined as'), { timeoutMs: 30_000 });
    expect((await waiting.result()).status).toBe('completed');
    expect((await holding.result()).status).toBe('completed');
  });
});
