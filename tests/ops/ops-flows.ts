/**
 * Flows for the operating tests on worker processes (tests/ops), loaded by `queueflow worker
 * --flows` and by the test's engine client. Node code tells the test what it did through files in
 * `params.markerDir` (the processes share nothing else).
 *
 * - `ops-five`: s1 → s2 → s3 → s4 → s5; each exec appends its process's pid to `<markerDir>/<node>`.
 *   s3 has a bug in processes started with `QF_OPS_BUG=1` (the code deployed first): it throws.
 *   The bug is inside exec, so the fixed code has the same graph, and the same fingerprint.
 * - `ops-takeover`: one node visited `limit` times (`shared.seen` gets each visit's number, so a
 *   step committed twice shows as a duplicate). Visit `slowVisit` hangs on its first execution,
 *   after writing `<markerDir>/slow-first` (pid); a later execution writes `slow-again`
 *   (pid and epoch ms) and goes on.
 * - `ops-asker` / `ops-answerer`: the asker `ask`s `params.address` once; the answerer receives
 *   there and replies. The answerer's exec hangs on its first execution, after writing
 *   `<markerDir>/answer-first` (pid); a later execution writes `answer-again` (pid) and goes on.
 * - `ops-lanes`: a ParallelBatchFlow of three children, one at a time (`concurrency: 1`), each
 *   appending its index to `shared.done`. Child 1 hangs on its first execution, after writing
 *   `<markerDir>/lane-first` (pid); a later execution writes `lane-again` (pid) and goes on.
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineFlow, Flow, Node, ParallelBatchFlow, type JsonObject, type Message } from '@queueflow/runtime';

interface MarkerParams {
  markerDir: string;
  [key: string]: unknown;
}

/**
 * The first execution anywhere writes `<markerDir>/<name>-first` (this process's pid) and hangs
 * until its process is killed; a later one writes `<name>-again` (`again`) and returns.
 */
async function hangTheFirstTime(markerDir: string, name: string, again: string): Promise<void> {
  try {
    writeFileSync(join(markerDir, `${name}-first`), String(process.pid), { flag: 'wx' });
    await new Promise((resolve) => setTimeout(resolve, 120_000));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    writeFileSync(join(markerDir, `${name}-again`), again);
  }
}

class Step extends Node<{ visited: string[] }, MarkerParams> {
  override exec(): void {
    appendFileSync(join(this.params.markerDir, this.name!), `${process.pid}\n`);
    if (this.name === 's3' && process.env.QF_OPS_BUG === '1') throw new Error('bug in s3 (the code deployed first)');
  }
  override post(shared: { visited: string[] }): void {
    shared.visited.push(this.name!);
  }
}

export const opsFive = defineFlow('ops-five', () => {
  const first = new Step({ name: 's1' });
  first
    .next(new Step({ name: 's2' }))
    .next(new Step({ name: 's3' }))
    .next(new Step({ name: 's4' }))
    .next(new Step({ name: 's5' }));
  return new Flow(first);
});

interface TakeoverShared {
  limit: number;
  count: number;
  seen: number[];
}

class Tick extends Node<TakeoverShared, MarkerParams & { slowVisit: number }> {
  override prep(shared: TakeoverShared): number {
    return shared.count + 1;
  }
  override async exec(visit: number): Promise<number> {
    const { markerDir, slowVisit } = this.params;
    if (visit === slowVisit) {
      await hangTheFirstTime(markerDir, 'slow', `${process.pid} ${Date.now()}`);
    }
    return visit;
  }
  override post(shared: TakeoverShared, _prep: number, visit: number): string | undefined {
    shared.count = visit;
    shared.seen.push(visit);
    return visit < shared.limit ? 'again' : undefined;
  }
}

export const opsTakeover = defineFlow('ops-takeover', () => {
  const tick = new Tick({ name: 'tick' });
  tick.on('again', tick);
  return new Flow(tick);
});

interface AskShared {
  answer?: unknown;
}

class Ask extends Node<AskShared, MarkerParams & { address: string }> {
  override prep(): Promise<Message | undefined> {
    return this.ask(this.params.address, { question: 'ready?' });
  }
  override post(shared: AskShared, answer: Message): void {
    shared.answer = answer.body;
  }
}

class Answer extends Node<AskShared, MarkerParams & { address: string }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override async exec(question: Message): Promise<Message> {
    await hangTheFirstTime(this.params.markerDir, 'answer', String(process.pid));
    return question;
  }
  override async post(shared: AskShared, _prep: Message, question: Message): Promise<void> {
    await this.reply(question, { yes: true });
    shared.answer = question.id;
  }
}

export const opsAsker = defineFlow('ops-asker', () => new Flow(new Ask({ name: 'ask' })));
export const opsAnswerer = defineFlow('ops-answerer', () => new Flow(new Answer({ name: 'answer' })));

interface LaneShared {
  done?: number[];
}

class Lane extends Node<LaneShared, MarkerParams & { index: number }> {
  override async exec(): Promise<number> {
    if (this.params.index === 1) await hangTheFirstTime(this.params.markerDir, 'lane', String(process.pid));
    return this.params.index;
  }
  override post(shared: LaneShared, _prep: unknown, index: number): void {
    shared.done = [...(shared.done ?? []), index];
  }
}

class Lanes extends ParallelBatchFlow<LaneShared, MarkerParams> {
  override prep(): JsonObject[] {
    return [0, 1, 2].map((index) => ({ index }));
  }
}

export const opsLanes = defineFlow(
  'ops-lanes',
  () => new Lanes(new Lane({ name: 'lane' }), { name: 'lanes', concurrency: 1 }),
);
