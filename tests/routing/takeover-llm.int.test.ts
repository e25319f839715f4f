/**
 * A worker serving several queues runs one BullMQ worker per queue; its heartbeat names them all,
 * so when it dies a survivor hands back its steps on every queue it served (not only `default`),
 * at once rather than after BullMQ's 30 s lock.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { hangsOnLlm, type RoutedShared } from './routing-flows.js';

const FLOWS = fileURLToPath(new URL('./routing-flows.ts', import.meta.url));

describe('queues: a dead worker serving default and llm', () => {
  const { engine, markerDir, marker, spawn } = useKillHarness('takeover-llm', [hangsOnLlm]);

  it('has its llm step handed back by a survivor through the heartbeat', async () => {
    const workers = await spawn(2, { flows: FLOWS, queues: ['default', 'llm'] });
    const handle = await engine.start(hangsOnLlm, { ran: [] }, { params: { markerDir } });
    const victimPid = Number(await waitFor('the llm step to start', () => marker('first')));
    const victim = workers.find((worker) => worker.pid === victimPid)!;
    const survivor = workers.find((worker) => worker !== victim)!;
    victim.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect((result.shared as unknown as RoutedShared).ran).toEqual([{ node: 'hang', pid: survivor.pid }]);
    expect(marker('again')).toBe(String(survivor.pid));
    // The survivor claimed the dead worker and handed its llm step back (BullMQ's lock, 30 s by
    // default, had not expired: the step was not taken as stalled). It logs that once the step is
    // back in the queue, where it may run and complete first: the line is awaited.
    const line = new RegExp(`stopped heartbeating .* took over 1 step\\(s\\): ${handle.id}-0`);
    await waitFor('the survivor to log the takeover', () => line.test(survivor.output()));
    expect(survivor.output()).toMatch(line);
  }, 120_000);
});
