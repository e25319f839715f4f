/**
 * Flows for the flow-control fault tests, loaded by worker processes.
 *
 * - `hog`: one node holding the `slot` budget (concurrency 1). Its first exec in a marker
 *   directory writes `<markerDir>/holder` (the worker's pid) and never returns, so the test can
 *   SIGKILL the worker holding the slot; every later exec returns at once.
 * - `paced`: one node under a rate of 5 per second; each exec appends the time (epoch ms) to
 *   `<markerDir>/execs`.
 */
import { appendFileSync, existsSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node } from '@queueflow/runtime';

interface Params {
  markerDir: string;
}

class Hog extends Node<Record<string, unknown>, Params> {
  override async exec(): Promise<string> {
    const holder = join(this.params.markerDir, 'holder');
    if (existsSync(holder)) return 'quick';
    const partial = `${holder}.${process.pid}.tmp`;
    writeFileSync(partial, String(process.pid));
    renameSync(partial, holder); // atomic: a reader never sees half a pid
    return new Promise<string>(() => {}); // holds the slot until the worker dies
  }
}

class Paced extends Node<Record<string, unknown>, Params> {
  override exec(): number {
    appendFileSync(join(this.params.markerDir, 'execs'), `${Date.now()}\n`);
    return 1;
  }
}

export const PACED_RATE = { max: 5, perMs: 1000 };

export const hog = defineFlow(
  'hog',
  () => new Flow(new Hog({ name: 'hog', limits: [{ key: 'slot', concurrency: 1 }] })),
);
export const paced = defineFlow(
  'paced',
  () => new Flow(new Paced({ name: 'paced', limits: [{ key: 'paced', rate: PACED_RATE }] })),
);
