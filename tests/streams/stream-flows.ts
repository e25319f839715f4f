/**
 * Flows for the stream tests, loaded by worker processes. `talker`'s `speak` node emits
 * `words` entries `{ word: i }`, `gapMs` apart, after writing `<markerDir>/speaking` (the pid of
 * the worker running it), then `done` in `post`; with `silentRetry`, a try after the first (one
 * that finds `speaking` written) emits nothing at all. `hello` emits one entry and ends.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node } from '@queueflow/runtime';

interface TalkerParams {
  words?: number;
  gapMs?: number;
  markerDir?: string;
  silentRetry?: boolean;
  [key: string]: unknown;
}

class Speak extends Node<object, TalkerParams> {
  /** This visit's try is a retry that says nothing (`silentRetry`). Per visit (rule S6). */
  private silent = false;

  override async exec(): Promise<void> {
    const { words = 5, gapMs = 0, markerDir, silentRetry } = this.params;
    if (markerDir) {
      this.silent = silentRetry === true && existsSync(join(markerDir, 'speaking'));
      writeFileSync(join(markerDir, 'speaking'), String(process.pid));
    }
    if (this.silent) return;
    for (let word = 0; word < words; word++) {
      this.emit({ word });
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
    }
  }
  override post(): void {
    if (!this.silent) this.emit('done');
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
