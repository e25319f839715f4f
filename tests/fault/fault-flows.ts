/**
 * Flows for the fault tests, loaded by worker processes. `countdown` visits one node `limit`
 * times; each visit's `post` appends its number to `shared.seen`, so a step committed twice
 * shows as a duplicate and a lost step as a gap. `exec` writes `<markerDir>/current` (the
 * worker's pid and the visit number) so a test knows which process runs the step; it writes a
 * file of its own and renames it over `current`, so a reader never sees the file half-written
 * (writeFileSync truncates first: a read in between gave an empty file, read as pid 0). With
 * `waitOnce`, only a visit's first run waits `execMs` (`<markerDir>/visit-<n>` says it began):
 * the worker that takes the step over from a killed one runs it at once.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node } from '@queueflow/runtime';

interface CountdownShared {
  limit: number;
  count: number;
  seen: number[];
}

interface CountdownParams {
  execMs?: number;
  markerDir?: string;
  waitOnce?: boolean;
}

class Tick extends Node<CountdownShared, CountdownParams> {
  override prep(shared: CountdownShared): number {
    return shared.count + 1;
  }
  override async exec(visit: number): Promise<number> {
    const { execMs = 0, markerDir, waitOnce } = this.params;
    let again = false; // waitOnce: the visit began before, on a worker that lost it
    if (markerDir) {
      if (waitOnce) {
        const began = join(markerDir, `visit-${visit}`);
        again = existsSync(began);
        writeFileSync(began, '');
      }
      const partial = join(markerDir, `current.${process.pid}.tmp`);
      writeFileSync(partial, `${process.pid} ${visit}`);
      renameSync(partial, join(markerDir, 'current')); // atomic on one file system
    }
    if (execMs > 0 && !again) await new Promise((resolve) => setTimeout(resolve, execMs));
    return visit;
  }
  override post(shared: CountdownShared, _prep: number, visit: number): string | undefined {
    shared.count = visit;
    shared.seen.push(visit);
    return visit < shared.limit ? 'again' : undefined;
  }
}

export const countdown = defineFlow('countdown', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

/** The initial shared store of a countdown of `limit` visits. */
export function countdownShared(limit: number): { limit: number; count: number; seen: number[] } {
  return { limit, count: 0, seen: [] };
}

/** 1, 2, …, n */
export function oneTo(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1);
}

/** Blocks the worker's main event loop for `params.blockMs` with a synchronous loop (a CPU-bound step). */
class BlockLoop extends Node<Record<string, unknown>, { blockMs: number }> {
  override exec(): void {
    const end = Date.now() + this.params.blockMs;
    while (Date.now() < end); // never yields: the main loop cannot turn
  }
}

export const blockLoop = defineFlow('block-loop', () => new Flow(new BlockLoop({ name: 'block' })));
