/**
 * awaitRuns: the results of runs, or on abort every run cancelled before it rejects, so that the
 * engine can be closed right after (a Ctrl-C in the command lines).
 */
import { LocalEngine, Node, defineFlow, Flow, type RunHandle, type RunResult } from '@queueflow/runtime';
import { describe, expect, it } from 'vitest';
import { awaitRuns } from '../src/utils/await-runs.js';

/** A run that never ends on its own: it waits for a message nobody sends. */
class WaitForever extends Node {
  override async prep(): Promise<unknown> {
    return this.receive('await-runs.nobody');
  }
}
const waits = defineFlow('await-runs-waits', () => new Flow(new WaitForever({ name: 'wait' })));
const quick = defineFlow('await-runs-quick', () => new Flow(new Node({ name: 'quick' })));

/** A handle whose result never comes. */
const pending = (id: string): RunHandle => ({ id, result: () => new Promise<RunResult>(() => {}) });

describe('awaitRuns', () => {
  it('gives the results in order when no signal aborts', async () => {
    const engine = new LocalEngine({ flows: [quick] });
    try {
      const [a, b] = [await engine.start(quick, { n: 1 }), await engine.start(quick, { n: 2 })];
      const results = await awaitRuns(engine, [a, b], new AbortController().signal);
      expect(results.map((r) => [r.id, r.status, r.shared])).toEqual([
        [a.id, 'completed', { n: 1 }],
        [b.id, 'completed', { n: 2 }],
      ]);
    } finally {
      await engine.close();
    }
  });

  it('on abort cancels every run, and rejects only once the cancels are sent', async () => {
    const sent: string[] = [];
    const engine = {
      cancel: async (id: string) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        sent.push(id);
      },
    };
    const interrupt = new AbortController();
    const waiting = awaitRuns(engine, [pending('r1'), pending('r2')], interrupt.signal);
    interrupt.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'RUN_CANCELLED', message: 'runs r1 and r2 cancelled' });
    expect(sent.sort()).toEqual(['r1', 'r2']);
  });

  it('cancels at once when the signal has aborted already, on a real engine', async () => {
    const engine = new LocalEngine({ flows: [waits] });
    try {
      const handle = await engine.start(waits, {});
      const interrupt = new AbortController();
      interrupt.abort();
      await expect(awaitRuns(engine, [handle], interrupt.signal)).rejects.toMatchObject({
        code: 'RUN_CANCELLED',
        message: `run ${handle.id} cancelled`,
      });
      expect((await engine.get(handle.id))?.status).toBe('cancelled');
    } finally {
      await engine.close();
    }
  });

  it('names the run it could not cancel', async () => {
    const engine = { cancel: async () => Promise.reject(new Error('Connection is closed.')) };
    const interrupt = new AbortController();
    const waiting = awaitRuns(engine, [pending('r1')], interrupt.signal);
    interrupt.abort();
    await expect(waiting).rejects.toThrow('could not cancel run r1: Connection is closed.');
  });
});
