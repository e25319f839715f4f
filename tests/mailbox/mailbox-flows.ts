/**
 * Flows for the mailbox tests: loaded by worker processes (`queueflow worker --flows`), by the
 * LocalEngine and run with `flow.run`. Every flow takes its addresses from params, so each test
 * uses addresses of its own. What a run received is kept in `shared` with the message id, so a
 * test can tell a redelivered message (same id) from a new one.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  defineFlow,
  Flow,
  Node,
  NonRetryableError,
  ParallelBatchFlow,
  type Json,
  type JsonObject,
  type Message,
} from '@queueflow/runtime';

/** A message as a run keeps it in `shared`. */
export interface Received {
  id: string;
  body: Json;
  replyTo?: string;
}

function kept(message: Message): Received {
  return { id: message.id, body: message.body, ...(message.replyTo ? { replyTo: message.replyTo } : {}) };
}

function timeout(ms: number | undefined): { timeoutMs?: number } {
  return ms === undefined ? {} : { timeoutMs: ms };
}

// ---------------------------------------------------------------------------------------------
// collect: receives `count` messages from `address`, one per step (a Flow looping on one node) or
// all of them in one step (`perStep: false`: the step parks between them and runs again).

export interface CollectShared {
  got: Received[];
  /** Set when a receive timed out. */
  timedOut?: boolean;
}
export interface CollectParams {
  address: string;
  count: number;
  perStep?: boolean;
  timeoutMs?: number;
  [key: string]: unknown;
}

class Collect extends Node<CollectShared, CollectParams> {
  override async prep(shared: CollectShared): Promise<(Message | undefined)[]> {
    const { address, count, perStep = true, timeoutMs } = this.params;
    const wanted = perStep ? 1 : count - shared.got.length;
    const messages: (Message | undefined)[] = [];
    for (let i = 0; i < wanted; i++) {
      const message = await this.receive(address, timeout(timeoutMs));
      messages.push(message);
      if (!message) break;
    }
    return messages;
  }
  override post(shared: CollectShared, messages: (Message | undefined)[]): string | undefined {
    for (const message of messages) {
      if (message) shared.got.push(kept(message));
      else shared.timedOut = true;
    }
    return !shared.timedOut && shared.got.length < this.params.count ? 'again' : undefined;
  }
}

export const collect = defineFlow('mb-collect', () => {
  const node = new Collect({ name: 'collect' });
  node.on('again', node);
  return new Flow(node);
});

// ---------------------------------------------------------------------------------------------
// produce: one step that sends `bodies` to `address`, in order (they leave when it commits).

export interface ProduceParams {
  address: string;
  bodies: Json[];
  [key: string]: unknown;
}

class Produce extends Node<{ sent?: number }, ProduceParams> {
  override async post(shared: { sent?: number }): Promise<undefined> {
    for (const body of this.params.bodies) await this.send(this.params.address, body);
    shared.sent = this.params.bodies.length;
    return undefined;
  }
}

export const produce = defineFlow('mb-produce', () => new Flow(new Produce({ name: 'produce' })));

// ---------------------------------------------------------------------------------------------
// wait-once: one receive, kept whole (`replyTo` included), or `null` after `timeoutMs`.

export interface WaitOnceShared {
  got?: Received | null;
}
export interface WaitOnceParams {
  address: string;
  timeoutMs?: number;
  [key: string]: unknown;
}

class WaitOnce extends Node<WaitOnceShared, WaitOnceParams> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address, timeout(this.params.timeoutMs));
  }
  override post(shared: WaitOnceShared, message: Message | undefined): undefined {
    shared.got = message ? kept(message) : null;
    return undefined;
  }
}

export const waitOnce = defineFlow('mb-wait-once', () => new Flow(new WaitOnce({ name: 'wait-once' })));

// ---------------------------------------------------------------------------------------------
// answer / ask: request/reply. The answerer replies to `count` questions at `address`; the asker
// asks `questions` one per step and keeps the answers.

export interface AnswerShared {
  answered: number;
}

class Answer extends Node<AnswerShared, { address: string; count: number; [key: string]: unknown }> {
  override async prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override async post(shared: AnswerShared, question: Message): Promise<string | undefined> {
    const q = (question.body as { q: string }).q;
    await this.reply(question, { a: q.toUpperCase(), n: shared.answered });
    shared.answered += 1;
    return shared.answered < this.params.count ? 'again' : undefined;
  }
}

export const answer = defineFlow('mb-answer', () => {
  const node = new Answer({ name: 'answer' });
  node.on('again', node);
  return new Flow(node);
});

export interface AskShared {
  answers: (Json | null)[];
}
export interface AskParams {
  address: string;
  questions: string[];
  timeoutMs?: number;
  [key: string]: unknown;
}

class Ask extends Node<AskShared, AskParams> {
  override async prep(shared: AskShared): Promise<Message | undefined> {
    const q = this.params.questions[shared.answers.length]!;
    return this.ask(this.params.address, { q }, timeout(this.params.timeoutMs));
  }
  override post(shared: AskShared, reply: Message | undefined): string | undefined {
    shared.answers.push(reply ? reply.body : null);
    return shared.answers.length < this.params.questions.length ? 'again' : undefined;
  }
}

export const ask = defineFlow('mb-ask', () => {
  const node = new Ask({ name: 'ask' });
  node.on('again', node);
  return new Flow(node);
});

// ---------------------------------------------------------------------------------------------
// refuse: receives one message, then fails the run (its step never commits), so the message goes
// back to its mailbox.

class Refuse extends Node<{ got?: Received }, { address: string; [key: string]: unknown }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override exec(message: Message): never {
    throw new NonRetryableError(`refused message ${message.id}`);
  }
}

export const refuse = defineFlow('mb-refuse', () => new Flow(new Refuse({ name: 'refuse' })));

// ---------------------------------------------------------------------------------------------
// slow-consume: receives `count` messages, one per step; exec appends `<pid> <message id>` to
// `<markerDir>/consume.log` and then takes `execMs`, so a test can kill the process holding a
// received message before its step commits. Each consumed message is acknowledged to
// `ackAddress` (the ack leaves with the commit: once, even when the step ran twice).

export interface SlowConsumeParams {
  address: string;
  ackAddress: string;
  count: number;
  execMs: number;
  markerDir: string;
  [key: string]: unknown;
}

class SlowConsume extends Node<CollectShared, SlowConsumeParams> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override async exec(message: Message): Promise<Received> {
    appendFileSync(join(this.params.markerDir, 'consume.log'), `${process.pid} ${message.id}\n`);
    await new Promise((resolve) => setTimeout(resolve, this.params.execMs));
    return kept(message);
  }
  override async post(shared: CollectShared, _message: Message, received: Received): Promise<string | undefined> {
    shared.got.push(received);
    await this.send(this.params.ackAddress, { ack: received.id });
    return shared.got.length < this.params.count ? 'again' : undefined;
  }
}

export const slowConsume = defineFlow('mb-slow-consume', () => {
  const node = new SlowConsume({ name: 'slow-consume' });
  node.on('again', node);
  return new Flow(node);
});

// ---------------------------------------------------------------------------------------------
// first-then-second: one step with two receives: `first` with a timeout, then `second`. When the
// first times out it says so on `log` (the step's send leaves when it parks on the second).

export interface TwoReceivesShared {
  first?: Json | null;
  second?: Json | null;
}
export interface TwoReceivesParams {
  first: string;
  second: string;
  log: string;
  firstTimeoutMs: number;
  [key: string]: unknown;
}

class TwoReceives extends Node<TwoReceivesShared, TwoReceivesParams> {
  override async prep(): Promise<{ first: Json | null; second: Json | null }> {
    const { first, second, log, firstTimeoutMs } = this.params;
    const a = await this.receive(first, { timeoutMs: firstTimeoutMs });
    if (!a) await this.send(log, { timedOut: first });
    const b = await this.receive(second);
    return { first: a ? a.body : null, second: b ? b.body : null };
  }
  override post(shared: TwoReceivesShared, got: { first: Json | null; second: Json | null }): undefined {
    shared.first = got.first;
    shared.second = got.second;
    return undefined;
  }
}

export const twoReceives = defineFlow('mb-two-receives', () => new Flow(new TwoReceives({ name: 'two-receives' })));

// ---------------------------------------------------------------------------------------------
// ask-in-exec: the agent asks from its exec and, like much model-calling code, turns any error
// into a fallback answer; post reports the answer on `out`.

export interface AskInExecParams {
  address: string;
  out: string;
  [key: string]: unknown;
}

class AskInExec extends Node<{ result?: Json }, AskInExecParams> {
  override async exec(): Promise<Json> {
    try {
      const reply = await this.ask(this.params.address, { q: 'status?' });
      return reply ? reply.body : 'no reply';
    } catch {
      return 'fallback';
    }
  }
  override async post(shared: { result?: Json }, _prep: unknown, result: Json): Promise<undefined> {
    shared.result = result;
    await this.send(this.params.out, { result });
    return undefined;
  }
}

export const askInExec = defineFlow('mb-ask-in-exec', () => new Flow(new AskInExec({ name: 'ask-in-exec' })));

// ---------------------------------------------------------------------------------------------
// fan-out: a ParallelBatchFlow whose children each wait on a mailbox of their own
// (`<base>.<i>`): on the engines, child runs that park while their parent waits on them.

export interface FanInShared {
  got: Record<string, Json>;
}

class ReceiveOwn extends Node<FanInShared, { base: string; i: number; [key: string]: unknown }> {
  override prep(): Promise<Message | undefined> {
    return this.receive(`${this.params.base}.${this.params.i}`);
  }
  override post(shared: FanInShared, message: Message): undefined {
    shared.got[String(this.params.i)] = message.body;
    return undefined;
  }
}

class EachChild extends ParallelBatchFlow<FanInShared> {
  override prep(): JsonObject[] {
    return [0, 1, 2].map((i) => ({ i }));
  }
}

export const fanIn = defineFlow(
  'mb-fan-in',
  () => new Flow(new EachChild(new ReceiveOwn({ name: 'receive-own' }), { name: 'each-child' })),
);

// ---------------------------------------------------------------------------------------------
// select: `receiveAny` over `addresses`, `count` times, one per step or all in one step (which
// then parks between them and runs again from its start); each kept with the address it came
// from. A timeout ends it.

export interface SelectShared {
  got: (Received & { address: string })[];
  timedOut?: boolean;
}
export interface SelectParams {
  addresses: string[];
  count: number;
  perStep?: boolean;
  timeoutMs?: number;
  [key: string]: unknown;
}

class Select extends Node<SelectShared, SelectParams> {
  override async prep(shared: SelectShared): Promise<SelectShared['got'] | undefined> {
    const { addresses, count, perStep = true, timeoutMs } = this.params;
    const got: SelectShared['got'] = [];
    for (let i = 0; i < (perStep ? 1 : count - shared.got.length); i++) {
      const received = await this.receiveAny(addresses, timeout(timeoutMs));
      if (!received) return undefined;
      got.push({ address: received.address, ...kept(received.message) });
    }
    return got;
  }
  override post(shared: SelectShared, got: SelectShared['got'] | undefined): string | undefined {
    if (!got) shared.timedOut = true;
    shared.got.push(...(got ?? []));
    return !shared.timedOut && shared.got.length < this.params.count ? 'again' : undefined;
  }
}

export const select = defineFlow('mb-select', () => {
  const node = new Select({ name: 'select' });
  node.on('again', node);
  return new Flow(node);
});

/** Every flow of this module. */
export const mailboxFlows = [
  select,
  collect,
  produce,
  waitOnce,
  answer,
  ask,
  refuse,
  slowConsume,
  twoReceives,
  askInExec,
  fanIn,
];
