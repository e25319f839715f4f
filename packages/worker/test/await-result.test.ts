/**
 * What `queueflow run`, `wait`, `retry` and `fork --wait` say while they wait for a run: after
 * 10 s still queued, a hint on stderr (why, when a worker refused the step or none serves the
 * queue; else how to start a worker), said once per reason; on Ctrl-C, that the run goes on and
 * how to cancel it (exit 130). On fake timers: the 10 s are the clock's, not the test's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunInfo, RunResult } from '@queueflow/runtime';
import { awaitResult } from '../src/cli/await-result.js';

const RUN = 'r1';
const START = "Start one with: queueflow worker --flows ./flows.ts --prefix '{p}'";

/** An engine whose run `r1` reads as `info` (changeable) and ends when `end` is called. */
function fakeEngine(info: Partial<RunInfo> | undefined) {
  let end: (result: RunResult) => void = () => {};
  const engine = {
    info,
    get: vi.fn(() => Promise.resolve(engine.info as RunInfo | undefined)),
    result: vi.fn(() => new Promise<RunResult>((resolve) => (end = resolve))),
    end: (result: RunResult) => end(result),
  };
  return engine;
}

const completed: RunResult = { id: RUN, status: 'completed', shared: {} };

describe('awaitResult', () => {
  let said: string[];
  beforeEach(() => {
    vi.useFakeTimers();
    said = [];
    vi.spyOn(console, 'error').mockImplementation((line: string) => void said.push(line));
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('says after 10 s, not before, that no worker has taken a queued run, and how to start one', async () => {
    const engine = fakeEngine({ id: RUN, status: 'queued', queue: 'default' });
    const result = awaitResult(engine, RUN, { flows: './flows.ts', prefix: '{p}' });
    await vi.advanceTimersByTimeAsync(9_999);
    expect(said).toEqual([]);
    expect(engine.get).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(said).toEqual([`run ${RUN} is still queued: no worker has taken it yet. Is one running? ${START}`]);
    engine.end(completed);
    expect(await result).toBe(completed);
  });

  it('says a hint once while it holds, and a new one when the reason changes', async () => {
    const engine = fakeEngine({ id: RUN, status: 'queued', queue: 'default' });
    const result = awaitResult(engine, RUN, { flows: './flows.ts', prefix: '{p}' });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(said).toHaveLength(1);
    engine.info = { id: RUN, status: 'queued', queue: 'default', refusal: 'unknown flow' };
    await vi.advanceTimersByTimeAsync(10_000);
    expect(said.slice(1)).toEqual([`run ${RUN} is still queued: a worker refused its step: unknown flow`]);
    engine.end(completed);
    await result;
  });

  it("names the queue no worker serves (another than 'default')", async () => {
    const noWorker = "no live worker serves queue 'gpu' (live workers serve: default)";
    const engine = fakeEngine({ id: RUN, status: 'queued', queue: 'gpu', noWorker });
    const result = awaitResult(engine, RUN, { prefix: '{p}' });
    await vi.advanceTimersByTimeAsync(10_000);
    expect(said).toEqual([`run ${RUN} is still queued: ${noWorker}`]);
    engine.end(completed);
    await result;
  });

  it('says nothing of a run that is not queued, nor after the result', async () => {
    const engine = fakeEngine({ id: RUN, status: 'running', queue: 'default' });
    const result = awaitResult(engine, RUN, { prefix: '{p}' });
    await vi.advanceTimersByTimeAsync(20_000);
    expect(engine.get).toHaveBeenCalledTimes(2);
    engine.end(completed);
    await result;
    engine.info = { id: RUN, status: 'queued', queue: 'default' };
    await vi.advanceTimersByTimeAsync(20_000);
    expect(engine.get).toHaveBeenCalledTimes(2);
    expect(said).toEqual([]);
  });

  it('on Ctrl-C says the run goes on and how to cancel it, and exits 130', async () => {
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const listeners = process.listenerCount('SIGINT');
    const engine = fakeEngine({ id: RUN, status: 'queued', queue: 'default' });
    const result = awaitResult(engine, RUN, { prefix: '{p}' });
    expect(process.listenerCount('SIGINT')).toBe(listeners + 1);
    process.emit('SIGINT');
    expect(said).toEqual([
      `\ninterrupted: run ${RUN} goes on without this command; \`queueflow cancel ${RUN} --prefix '{p}'\` stops it`,
    ]);
    expect(exit).toHaveBeenCalledWith(130);
    engine.end(completed);
    await result;
    expect(process.listenerCount('SIGINT')).toBe(listeners); // once, and gone with the wait
  });

  // Whoever reads `run <id> started` may press Ctrl-C at once: said before the handler was set, a
  // command preempted in between died of the signal itself (a CI run of cli.int once did).
  it('says its announce line once Ctrl-C is handled, not before', async () => {
    const listeners = process.listenerCount('SIGINT');
    const handledWhenSaid: number[] = [];
    vi.mocked(console.error).mockImplementation(() => void handledWhenSaid.push(process.listenerCount('SIGINT')));
    const engine = fakeEngine({ id: RUN, status: 'running', queue: 'default' });
    const result = awaitResult(engine, RUN, { prefix: '{p}', announce: `run ${RUN} started` });
    expect(handledWhenSaid).toEqual([listeners + 1]);
    engine.end(completed);
    await result;
  });
});
