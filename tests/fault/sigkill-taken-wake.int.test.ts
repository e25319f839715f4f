/**
 * Fault: a worker that woke a parked run and took it (direct hand-off, CommitFields.takenBy) is
 * SIGKILLed while it runs the woken step. The woken run has no task of its own in BullMQ at that
 * moment (its wake waits, delayed to its deadline); the survivor that takes the dead worker over
 * makes it due at once, from the dead worker's set of taken wakes. Both runs complete, the
 * question is answered once, and the survivor's log line names the run it woke.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import { opsAnswerer, opsAsker } from '../ops/ops-flows.js';

const FLOWS = fileURLToPath(new URL('../ops/ops-flows.ts', import.meta.url));

describe('fault: SIGKILL the worker running a parked run it woke and took', () => {
  const { engine, markerDir, marker, spawn } = useKillHarness('taken-wake', [opsAsker, opsAnswerer]);

  it('the survivor makes the taken wake due; both runs complete, the question answered once', async () => {
    const workers = await spawn(2, { flows: FLOWS, concurrency: 2 });
    const params = { markerDir, address: 'answers-please' };
    const answerer = await engine.start(opsAnswerer, {}, { params });
    await waitFor('the answerer to park', async () => (await engine.get(answerer.id))?.status === 'waiting');
    const asker = await engine.start(opsAsker, {}, { params });

    // The asker's park delivers the question and takes the answerer's wake: the same process runs
    // the answerer's step, which hangs there.
    const victimPid = Number(await waitFor('the answer to start', () => marker('answer-first')));
    expect((await engine.get(asker.id))?.status).toBe('waiting'); // parked on its answer
    const victim = workers.find((worker) => worker.pid === victimPid);
    expect(victim, `the worker running the answer (pid ${victimPid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');
    const survivor = workers.find((worker) => worker !== victim)!;

    const again = await waitFor('the survivor to run the answer', () => marker('answer-again'), { timeoutMs: 60_000 });
    expect(Number(again)).toBe(survivor.pid);
    const [asked, answered] = await Promise.all([asker.result(), answerer.result()]);
    expect(answered.status, JSON.stringify(answered.error)).toBe('completed');
    expect(asked.status, JSON.stringify(asked.error)).toBe('completed');
    expect((asked.shared as { answer?: unknown }).answer).toEqual({ yes: true });
    expect((await engine.mailboxes()).filter((mailbox) => mailbox.address === 'answers-please')).toEqual([]);
    expect(survivor.output()).toContain(`made due 1 task(s) it had taken: ${answerer.id}-0-p1`);
  }, 120_000);
});
