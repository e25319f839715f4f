/**
 * Flows for the CLI tests, loaded by `queueflow worker|run|graph --flows` (through tsx). Fake
 * nodes only: no network, no timers. `cli-hold` parks on a mailbox until a message comes, so a
 * test holds a run open without sleeping and releases it with `queueflow send`.
 */
import { existsSync } from 'node:fs';
import { defineFlow, Flow, Node, ParallelBatchFlow, type Json, type Message } from '@queueflow/runtime';

// ---------------------------------------------------------------------------------------------
// cli-greet: greet --greeted--> sign. Reads `shared.name` and `params.greeting`; the last action
// is 'signed'.

export interface GreetShared {
  name: string;
  text?: string;
  visited?: string[];
}
export interface GreetParams {
  greeting: string;
}

class Greet extends Node<GreetShared, GreetParams> {
  override prep(shared: GreetShared): string {
    return shared.name;
  }
  override exec(name: string): string {
    return `${this.params.greeting}, ${name}`;
  }
  override post(shared: GreetShared, _name: string, text: string): string {
    shared.text = text;
    shared.visited = [...(shared.visited ?? []), 'greet'];
    return 'greeted';
  }
}

class Sign extends Node<GreetShared, GreetParams> {
  override post(shared: GreetShared): string {
    shared.text = `${shared.text ?? ''}!`;
    shared.visited = [...(shared.visited ?? []), 'sign'];
    return 'signed';
  }
}

export const greet = defineFlow('cli-greet', () => {
  const first = new Greet({ name: 'greet' });
  first.on('greeted', new Sign({ name: 'sign' }));
  return new Flow(first);
});

// ---------------------------------------------------------------------------------------------
// cli-fail: one node whose only try throws `boom: <params.reason>` (after `prep` ran).

class Explode extends Node<{ before?: boolean }, { reason: string; [key: string]: unknown }> {
  override exec(): never {
    throw new Error(`boom: ${this.params.reason}`);
  }
}

export const fail = defineFlow('cli-fail', () => new Flow(new Explode({ name: 'explode' })));

// ---------------------------------------------------------------------------------------------
// cli-hold: waits (no timeout) for one message on `params.address`, keeps its body in
// `shared.got` and its id in `shared.gotId`.

class Hold extends Node<{ got?: Json; gotId?: string }, { address: string }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override post(shared: { got?: Json; gotId?: string }, message: Message | undefined): string {
    shared.got = message ? message.body : null;
    if (message) shared.gotId = message.id;
    return 'released';
  }
}

export const hold = defineFlow('cli-hold', () => new Flow(new Hold({ name: 'hold' })));

// ---------------------------------------------------------------------------------------------
// cli-flaky: count → check → done. `check` fails while the file at `params.failWhile` exists, so
// a test makes a run fail, removes the file (the "fix"), and retries the run. `shared.counted`
// records each visit of `count`, so a retry that ran it again would show.

export interface FlakyShared {
  counted?: number;
  checked?: boolean;
  done?: boolean;
}

class Count extends Node<FlakyShared> {
  override post(shared: FlakyShared): void {
    shared.counted = (shared.counted ?? 0) + 1;
  }
}

class Check extends Node<FlakyShared, { failWhile: string }> {
  override exec(): void {
    if (existsSync(this.params.failWhile)) throw new Error(`${this.params.failWhile} exists`);
  }
  override post(shared: FlakyShared): void {
    shared.checked = true;
  }
}

class Done extends Node<FlakyShared> {
  override post(shared: FlakyShared): void {
    shared.done = true;
  }
}

export const flaky = defineFlow('cli-flaky', () => {
  const count = new Count({ name: 'count' });
  count.next(new Check({ name: 'check' })).next(new Done({ name: 'done' }));
  return new Flow(count);
});

// ---------------------------------------------------------------------------------------------
// cli-metered: a fan-out of three children whose node draws from the budget 'cli-metered', one
// unit per 10 minutes: the first child runs, the other two wait for the budget (throttled).

class Children extends ParallelBatchFlow {
  override prep(): { i: number }[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
}

export const metered = defineFlow(
  'cli-metered',
  () =>
    new Children(
      new Flow(new Node({ name: 'metered', limits: [{ key: 'cli-metered', rate: { max: 1, perMs: 600_000 } }] })),
    ),
);
