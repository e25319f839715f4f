/**
 * Flows for the stream tests, loaded by worker processes. `talker`'s `speak` node emits
 * `words` entries `{ word: i }`, `gapMs` apart, after writing `<markerDir>/speaking` (the pid of
 * the worker running it), then `done` in `post`. `hello` emits one entry and ends.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node } from '@queueflow/runtime';

interface TalkerParams {
  words?: number;
  gapMs?: number;
  markerDir?: string;
  [key: string]: unknown;
}

class Speak extends Node<object, TalkerParams> {
  override async exec(): Promise<void> {
    const { words = 5, gapMs = 0, markerDir } = this.params;
    if (markerDir) writeFileSync(join(markerDir, 'speaking'), String(process.pid));
    for (let word = 0; word < words; word++) {
      this.emit({ word });
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  }
  override post(): void {
    this.emit('done');
  }
}

export const talker = defineFlow('talker', () => new Flow(new Speak({ name: 'speak' })));

class Hello extends Node<{ n: number }> {
  override prep(shared: { n: number }): number {
    return shared.n;
  }
  override exec(n: number): void {
    this.emit({ hello: n });
  }
}

export const hello = defineFlow('hello', () => new Flow(new Hello({ name: 'hello' })));
