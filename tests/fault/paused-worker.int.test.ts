/**
 * Reliability under load: a worker paused (SIGSTOP) or starved of CPU in the middle of a batch
 * on three workers. Busy is not dead: a starved worker keeps beating from its heartbeat thread
 * and is taken over by nobody. A worker paused past the lapse is taken over, and when it comes
 * back it fences itself (stops its steps, drops their results) and rejoins under a new id; the
 * batch completes with every step committed once, each run whose step it held logs one
 * `taken-over` from it by a survivor, and no worker's memory grows (it grew to 2–4 GB before:
 * duplicate child ends each read the whole fan-out).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { childRunId } from '@queueflow/runtime/kernel';
import { useKillHarness } from '../support/kill-harness.js';
import { waitFor } from '../support/wait-for.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { STEPS, pacedBatch, pacedShared } from './load-flows.js';

const FLOWS = fileURLToPath(new URL('./load-flows.ts', import.meta.url));

/** Resident memory of a process, in bytes (Linux /proc). */
function rssOf(pid: number): number {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kb ?? 0) * 1024;
  } catch {
    return 0; // exited
  }
}

/** Samples the RSS of `workers` every 250 ms until stopped; returns the largest seen, by pid. */
function sampleRss(workers: WorkerProcess[]): () => Map<number, number> {
  const peak = new Map<number, number>();
  const sample = (): void => {
    for (const worker of workers) peak.set(worker.pid, Math.max(peak.get(worker.pid) ?? 0, rssOf(worker.pid)));
  };
  sample();
  const timer = setInterval(sample, 250);
  return () => {
    clearInterval(timer);
    sample();
    return peak;
  };
}

/** How many times `text` appears in `output`. */
function count(output: string, text: string): number {
  return output.split(text).length - 1;
}

/**
 * What a survivor's takeover of the paused worker (pid `pid`) said: the paused worker's id, and
 * the runs whose step it held (`took over … step(s)`: `<run>-<step>`, maybe with `(job …)`; `made
 * due … task(s) it had taken`: `<run>-<step>`, a wake's with `-p<n>`).
 */
function takeoverOf(output: string, pid: number): { from: string; runs: string[]; line: string } | undefined {
  const line = output.split('\n').find((text) => text.includes(`pid ${pid}) stopped heartbeating`));
  const from = line && /worker (\S+) \(\S+ pid \d+\) stopped heartbeating/.exec(line)?.[1];
  if (!line || !from) return undefined;
  const listed = [/took over \d+ step\(s\): ([^;"]+)/, /made due \d+ task\(s\) it had taken: ([^;"]+)/].flatMap(
    (pattern) => pattern.exec(line)?.[1]?.split(', ') ?? [],
  );
  const runs = listed.map((item) => /^(.+?)-\d+(?:-p\d+)?(?: \(job .*\))?$/.exec(item)![1]!);
  return { from, runs: [...new Set(runs)], line };
}

describe('fault: a paused or starved worker under load', () => {
  const harness = useKillHarness('paused-worker', [pacedBatch]);
  let workers: WorkerProcess[] = [];
  /** Each worker's largest RSS during a batch with no fault (bytes). */
  let steady = new Map<number, number>();

  async function batch(docs: number, name: string, during: (runId: string) => Promise<void> = async () => {}) {
    const handle = await harness.engine.start(pacedBatch, pacedShared(docs, name), { params: { execMs: 100 } });
    await during(handle.id);
    // Within the test's own deadline, so that a batch that never ends says where it stands and
    // what the workers said, rather than only that the test timed out.
    const result = await handle.result({ timeoutMs: 90_000 }).catch(async (error: Error) => {
      const info = await harness.engine.get(handle.id);
      const outputs = workers.map((worker) => `--- worker ${worker.pid}\n${worker.output().slice(-4000)}`);
      throw new Error(
        `${error.message}; the batch stands at ${JSON.stringify({ status: info?.status, children: info?.children })}\n${outputs.join('\n')}`,
      );
    });
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    // Every document's child visited its node STEPS times, each visit committed once.
    const visits = result.shared.visits;
    expect(Object.keys(visits)).toHaveLength(docs);
    for (const [doc, seen] of Object.entries(visits)) expect(seen, doc).toEqual([1, 2, 3].slice(0, STEPS));
    return handle.id;
  }

  it('runs a batch on three workers: their steady memory', async () => {
    workers = await harness.spawn(3, { flows: FLOWS, concurrency: 8 });
    const peaks = sampleRss(workers);
    await batch(300, 'warm').finally(() => (steady = peaks()));
  });

  it('a worker paused for 12 s fences itself and rejoins; the batch completes, each step once, takeovers logged', async () => {
    const [victim, ...others] = workers as [WorkerProcess, ...WorkerProcess[]];
    const stopSampling = sampleRss(workers);
    let after = new Map<number, number>();
    const batchId = await batch(600, 'paused', async (id) => {
      // Its documents' runs under way, and a beat of the victim since that counts steps running:
      // it holds some of theirs when paused (not the batch's own first step, nor nothing). Two at
      // least: a step whose commit the victim sent just before the pause, and Redis ran just after
      // the survivor's note, moved on and logs no takeover (a busy CI pass once paused it holding
      // only that one).
      await waitFor('documents to end', async () => ((await harness.engine.get(id))?.children?.ended ?? 0) > 0);
      const victimNow = async () => (await harness.engine.workers()).find((worker) => worker.pid === victim.pid);
      const since = (await victimNow())?.lastSeenAt ?? 0;
      await waitFor('the victim to run steps', async () => {
        const entry = await victimNow();
        return entry !== undefined && entry.lastSeenAt > since && entry.active >= 2;
      });
      victim.kill('SIGSTOP');
      // Past the lapse (6 s): a survivor claims it, on the store's clock, and names it once.
      await waitFor(
        'a survivor to take the paused worker over',
        () => others.some((worker) => worker.output().includes(`pid ${victim.pid}) stopped heartbeating`)),
        { timeoutMs: 30_000 },
      );
      await new Promise((resolve) => setTimeout(resolve, 12_000 - 6_000)); // the rest of the 12 s pause
      victim.kill('SIGCONT');
      await waitFor('the paused worker to fence itself', () => victim.output().includes('rejoined as'), {
        timeoutMs: 30_000,
      });
    }).finally(() => (after = stopSampling()));
    expect(count(victim.output(), 'fenced:')).toBe(1);
    const takeovers = others.map((worker) => count(worker.output(), `pid ${victim.pid}) stopped heartbeating`));
    expect(takeovers.reduce((a, b) => a + b)).toBe(1);
    // Nobody took a live worker over, the resumed one included.
    for (const worker of workers)
      for (const other of workers.filter((w) => w !== victim && w !== worker))
        expect(worker.output(), `${worker.pid} took ${other.pid} over`).not.toContain(`pid ${other.pid}) stopped`);
    for (const worker of workers) expect(after.get(worker.pid)!).toBeLessThanOrEqual(1.5 * steady.get(worker.pid)!);
    // Each document's run whose step the paused worker held (made and remembered by any worker,
    // which may be the one that gets the step back) logs one `taken-over`: from the paused
    // worker, by a survivor; no other run logs one.
    const takeover = others.map((worker) => takeoverOf(worker.output(), victim.pid)).find(Boolean)!;
    expect(takeover.runs.length, takeover.line).toBeGreaterThan(0);
    const children = Array.from({ length: 600 }, (_, i) => childRunId(batchId, 1, i)); // its fan-out is step 1
    const logged = new Map<string, unknown[]>();
    for (const id of [batchId, ...children]) {
      const taken = (await harness.engine.runEvents(id)).filter((event) => event.kind === 'taken-over');
      if (taken.length > 0) logged.set(id, taken);
    }
    // A run whose job the survivor's claim and BullMQ's stall check moved at the same moment may
    // log none (a known limit, README "History"): every entry is of a run it held, and some are.
    expect(logged.size, takeover.line).toBeGreaterThan(0);
    for (const id of logged.keys()) expect(takeover.runs, takeover.line).toContain(id);
    const survivor = new RegExp(`^[^:]+:(${others.map((worker) => worker.pid).join('|')}):`);
    for (const [id, taken] of logged)
      expect(taken, id).toEqual([
        expect.objectContaining({ from: takeover.from, by: expect.stringMatching(survivor) }),
      ]);
  });

  // The paused worker of the test before is declared dead and rejoins twice more: three times in a row.
  it('a worker fenced twice more in a row keeps its memory within 1.5× its steady state', async () => {
    const [victim, survivor] = workers as [WorkerProcess, WorkerProcess, WorkerProcess];
    const stopSampling = sampleRss([victim]);
    let peak = 0;
    const rejoinedBefore = count(victim.output(), 'rejoined as');
    await batch(900, 'soak', async () => {
      for (let cycle = 1; cycle <= 2; cycle++) {
        const claimedBefore = workers.reduce((n, w) => n + count(w.output(), `pid ${victim.pid}) stopped`), 0);
        victim.kill('SIGSTOP');
        await waitFor(
          `take-over ${cycle}`,
          () => workers.reduce((n, w) => n + count(w.output(), `pid ${victim.pid}) stopped`), 0) > claimedBefore,
          { timeoutMs: 30_000 },
        ).catch((error: Error) => {
          throw new Error(`${error.message}\n${workers.map((w) => `--- ${w.pid}\n${w.output()}`).join('\n')}`);
        });
        victim.kill('SIGCONT');
        await waitFor(`rejoin ${cycle}`, () => count(victim.output(), 'rejoined as') === rejoinedBefore + cycle, {
          timeoutMs: 30_000,
        });
      }
    }).finally(() => (peak = stopSampling().get(victim.pid)!));
    expect(survivor.output()).not.toContain('fenced:');
    expect(peak).toBeLessThanOrEqual(1.5 * steady.get(victim.pid)!);
  });

  it('a worker starved by busy loops on both cores for 15 s is taken over by nobody', async () => {
    const takenBefore = workers.map((worker) => count(worker.output(), 'stopped heartbeating'));
    const fencedBefore = workers.map((worker) => count(worker.output(), 'fenced:'));
    await batch(300, 'starved', async () => {
      const burners = [0, 1].map(() =>
        spawn(process.execPath, ['-e', 'const end = Date.now() + 15000; while (Date.now() < end);'], {
          stdio: 'ignore',
        }),
      );
      await Promise.all(burners.map((burner) => new Promise((resolve) => burner.once('exit', resolve))));
    });
    expect(workers.map((worker) => count(worker.output(), 'stopped heartbeating'))).toEqual(takenBefore);
    expect(workers.map((worker) => count(worker.output(), 'fenced:'))).toEqual(fencedBefore);
  });
});
