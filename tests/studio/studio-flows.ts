/**
 * Flows for the studio's browser tests, loaded by `queueflow worker --flows` processes and by the
 * test's engine client (for graphs and forks). Each takes what must differ between tests
 * (mailbox addresses, a gate file) from its params.
 */
import { existsSync } from 'node:fs';
import {
  defineAgent,
  defineFlow,
  Flow,
  Node,
  NonRetryableError,
  ParallelBatchFlow,
  type ItemOutcome,
  type JsonObject,
  type Message,
} from '@queueflow/runtime';
import { team } from './studio-team.js';

// ---------------------------------------------------------------------------------------------
// review: draft → enrich → approve (asks a person at `params.desk`, parked until answered) →
// publish on "yes", back to enrich otherwise.

export interface ReviewShared {
  title: string;
  draft?: string;
  tags?: string[];
  log?: string[];
  approval?: unknown;
  published?: boolean;
}

class Draft extends Node<ReviewShared> {
  override post(shared: ReviewShared): undefined {
    shared.draft = `${shared.title}: a first draft`;
    shared.log = ['drafted'];
    return undefined;
  }
}

class Enrich extends Node<ReviewShared> {
  override post(shared: ReviewShared): undefined {
    shared.draft = `${shared.draft ?? ''}, enriched with sources`;
    shared.tags = ['queues', 'redis'];
    shared.log!.push('enriched');
    return undefined;
  }
}

class Approve extends Node<ReviewShared, { desk: string; [key: string]: unknown }> {
  override prep(shared: ReviewShared): Promise<Message | undefined> {
    return this.ask(this.params.desk, { q: `Publish "${shared.title}"?`, draft: shared.draft ?? '' });
  }
  override post(shared: ReviewShared, reply: Message | undefined): string {
    shared.approval = reply?.body ?? null;
    shared.log!.push('reviewed');
    return reply?.body === 'yes' ? 'yes' : 'no';
  }
}

class Publish extends Node<ReviewShared> {
  override post(shared: ReviewShared): undefined {
    shared.published = true;
    shared.log!.push('published');
    return undefined;
  }
}

export const review = defineFlow('st-review', () => {
  const draft = new Draft({ name: 'draft' });
  const enrich = new Enrich({ name: 'enrich' });
  const approve = new Approve({ name: 'approve' });
  draft.next(enrich).next(approve);
  approve.on('yes', new Publish({ name: 'publish' }));
  approve.on('no', enrich);
  return new Flow(draft);
});

// ---------------------------------------------------------------------------------------------
// fan: `shared.n` children; child `failIndex` fails; children from `gateFrom` on wait for a
// message at `<gate>.<i>`, so the parent waits with part of its children ended. Every child
// writes `/last` too: merge conflicts, resolved in parameter-set order.

export interface FanParams {
  gate: string;
  gateFrom: number;
  failIndex: number;
  [key: string]: unknown;
}

class Square extends Node<JsonObject, FanParams> {
  override async prep(): Promise<Message | undefined> {
    const i = this.params.i as number;
    return i >= this.params.gateFrom ? this.receive(`${this.params.gate}.${i}`) : undefined;
  }
  override exec(): number {
    const i = this.params.i as number;
    if (i === this.params.failIndex) throw new NonRetryableError(`child ${i} refuses to square`);
    return i * i;
  }
  override post(shared: JsonObject, _message: unknown, square: number): undefined {
    ((shared.squares ??= {}) as JsonObject)[String(this.params.i)] = square;
    shared.last = this.params.i as number;
    return undefined;
  }
}

class EachNumber extends ParallelBatchFlow<JsonObject, FanParams> {
  override prep(shared: JsonObject): JsonObject[] {
    return Array.from({ length: shared.n as number }, (_, i) => ({ i }));
  }
  override post(shared: JsonObject, _list: unknown, outcomes: ItemOutcome[] | undefined): string {
    shared.failed = (outcomes ?? []).filter((outcome) => !outcome.ok).length;
    return 'squared';
  }
}

export const fan = defineFlow(
  'st-fan',
  () => new EachNumber(new Square({ name: 'square' }), { name: 'each-number', onItemError: 'collect' }),
);

// ---------------------------------------------------------------------------------------------
// gate: `check` fails (not retryable) until the file `params.gateFile` exists; then `done`.

class Check extends Node<JsonObject, { gateFile: string; [key: string]: unknown }> {
  override exec(): string {
    if (!existsSync(this.params.gateFile)) throw new NonRetryableError('the gate is closed');
    return 'open';
  }
  override post(shared: JsonObject, _prep: unknown, state: string): undefined {
    shared.gate = state;
    return undefined;
  }
}

class Done extends Node<JsonObject> {
  override post(shared: JsonObject): undefined {
    shared.done = true;
    return undefined;
  }
}

export const gate = defineFlow('st-gate', () => {
  const check = new Check({ name: 'check' });
  check.next(new Done({ name: 'done' }));
  return new Flow(check);
});

// ---------------------------------------------------------------------------------------------
// sum: double the numbers, then add them up. A fork after `double` with other doubled numbers
// gives another total.

class Double extends Node<{ numbers: number[]; doubled?: number[] }> {
  override post(shared: { numbers: number[]; doubled?: number[] }): undefined {
    shared.doubled = shared.numbers.map((n) => n * 2);
    return undefined;
  }
}

class Sum extends Node<{ doubled?: number[]; total?: number }> {
  override post(shared: { doubled?: number[]; total?: number }): undefined {
    shared.total = (shared.doubled ?? []).reduce((a, b) => a + b, 0);
    return undefined;
  }
}

export const sum = defineFlow('st-sum', () => {
  const double = new Double({ name: 'double' });
  double.next(new Sum({ name: 'sum' }));
  return new Flow(double);
});

// ---------------------------------------------------------------------------------------------
// wait: one step parked on `params.address` until a message or `params.timeoutMs`: a run that
// stays `waiting` (for the runs page at scale).

class Wait extends Node<JsonObject, { address: string; [key: string]: unknown }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override post(shared: JsonObject, message: Message | undefined): undefined {
    shared.got = message?.body ?? null;
    return undefined;
  }
}

export const wait = defineFlow('st-wait', () => new Flow(new Wait({ name: 'wait' })));

// ---------------------------------------------------------------------------------------------
// markup: nodes and an action named with HTML, which the studio must show as text.

/** Node names and an action that would be markup if a page parsed them. */
export const MARKUP = {
  first: '<img src=x onerror=alert(1)>',
  second: '<b>bold</b><script>alert(2)</script>',
  action: '<i onmouseover=alert(3)>go</i>',
};

class Marked extends Node<JsonObject> {
  override post(shared: JsonObject): string | undefined {
    shared[this.name ?? ''] = true;
    return this.name === MARKUP.first ? MARKUP.action : undefined;
  }
}

export const markup = defineFlow('st-markup', () => {
  const first = new Marked({ name: MARKUP.first });
  first.on(MARKUP.action, new Marked({ name: MARKUP.second }));
  return new Flow(first);
});

// ---------------------------------------------------------------------------------------------
// metered: a fan-out of three children drawing from the budget 'st-metered' (one unit per 10
// minutes): one child runs, two wait for the budget (throttled). For the Queues page.

class MeteredChildren extends ParallelBatchFlow {
  override prep(): { i: number }[] {
    return [{ i: 0 }, { i: 1 }, { i: 2 }];
  }
}

export const metered = defineFlow(
  'st-metered',
  () =>
    new MeteredChildren(
      new Flow(new Node({ name: 'metered', limits: [{ key: 'st-metered', rate: { max: 1, perMs: 600_000 } }] })),
    ),
);

// ---------------------------------------------------------------------------------------------
// elsewhere: one step on the queue 'st-nobody', which no worker serves: it waits there.

export const elsewhere = defineFlow('st-elsewhere', () => new Flow(new Node({ name: 'far', queue: 'st-nobody' })));

// ---------------------------------------------------------------------------------------------
// flaky: its first try fails, its second succeeds (each run counts its own tries in `shared`).

class Flaky extends Node<{ tries?: number }> {
  constructor() {
    super({ name: 'flaky', maxRetries: 2 });
  }
  override exec(): void {
    if (this.currentRetry === 0) throw new Error('first try fails');
  }
}

export const flaky = defineFlow('st-flaky', () => {
  const first = new Flaky();
  first.next(new Node({ name: 'after' }));
  return new Flow(first);
});

/** Every flow of this module. */
export const studioFlows = [review, fan, gate, sum, wait, markup, metered, elsewhere, flaky];

/**
 * Counts the `add` of each message; a message with `fail: true` fails its turn (a dead letter); one
 * with `remindInMs` sets the reminder `recount`.
 */
class Tally extends Node<{ total: number }> {
  override prep(state: { total: number }): void {
    const body = this.message!.body as { add?: number; fail?: boolean; remindInMs?: number };
    if (body.fail) throw new NonRetryableError('this message fails its turn');
    state.total += body.add ?? 0;
    if (body.remindInMs !== undefined) this.remind('recount', { afterMs: body.remindInMs });
  }
}
export const tally = defineAgent('st-tally', {
  state: () => ({ total: 0 }),
  turn: () => new Tally({ name: 'tally' }),
  capacity: 100, // the agent page shows its inbox against it
});

/** Every agent of the studio's tests: the tally, and the team of the Conversations page (studio-team.ts). */
export const studioAgents = [tally, ...team];
