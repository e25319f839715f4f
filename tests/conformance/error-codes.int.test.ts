/**
 * Contract: every error that ends a run carries a code (issue 16, item 5), on both engines.
 *
 * - A key JSON Patch refuses (`__proto__`) in `shared`, params, a prep or exec result or a
 *   message body is refused at the JSON boundary with NOT_JSON naming its path: before anything is
 *   stored for a run's input, as the step's failure inside a run (a fan-out child included, where
 *   it used to fail the run with the JSON Patch library's message and no code).
 * - A `receive` or `send` with a bad address fails its run with INVALID_ARGUMENT.
 * - An error thrown by node code without a code of its own ends the run with NODE_FAILED, in the
 *   run's error and in its error records; a code of its own is kept.
 */
import { describe, expect, it } from 'vitest';
import {
  defineFlow,
  Flow,
  Node,
  ParallelBatchFlow,
  type FlowDefinition,
  type JsonObject,
  type RunResult,
} from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

/** An object with an own key `__proto__` holding `{ x: 1 }`, as `JSON.parse` makes it. */
const protoKey = (): JsonObject => JSON.parse('{"__proto__": {"x": 1}}') as JsonObject;

class Ok extends Node<S> {
  override post(shared: S): void {
    shared.ok = true;
  }
}

/** Runs `body` in the phase named, with the node's mailbox and `shared` at hand. */
class Does extends Node<S> {
  constructor(
    private readonly phase: 'prep' | 'exec' | 'post',
    private readonly body: (node: Does, shared: S) => unknown,
  ) {
    super({ name: 'does' });
  }
  private shared: S = {};
  override async prep(shared: S): Promise<unknown> {
    this.shared = shared;
    return this.phase === 'prep' ? this.body(this, shared) : undefined;
  }
  override async exec(): Promise<unknown> {
    return this.phase === 'exec' ? this.body(this, this.shared) : undefined;
  }
  override async post(shared: S): Promise<void> {
    if (this.phase === 'post') await this.body(this, shared);
  }
}

function oneNode(name: string, phase: 'prep' | 'exec' | 'post', body: (node: Does, shared: S) => unknown) {
  return defineFlow(name, () => {
    const first = new Ok({ name: 'first' });
    first.next(new Does(phase, body));
    return new Flow(first);
  });
}

class Fan extends ParallelBatchFlow<S> {
  override prep(): JsonObject[] {
    return [{ i: 0 }, { i: 1 }];
  }
}
/** A fan-out whose second child puts a `__proto__` key in `shared`. */
const childProto = defineFlow('codes-child-proto', () => {
  const fan = new Fan(
    new Does('post', (node, shared) => {
      shared[`c${node.params.i as number}`] = node.params.i === 1 ? protoKey() : 'fine';
    }),
    { name: 'fan' },
  );
  return new Flow(fan);
});

class CodedError extends Error {
  readonly code = 'E_MINE';
}

const failing: {
  what: string;
  flow: FlowDefinition;
  code: string;
  message: RegExp;
  /** A failed fan-out child's own error, the last of its parent's error records. */
  child?: { code: string; message: RegExp };
}[] = [
  {
    what: 'a fan-out child puts a `__proto__` key in shared',
    flow: childProto,
    code: 'CHILD_FAILED',
    message: /^child 1 of 'fan' failed: shared\.c1\["__proto__"\] is a key that JSON Patch refuses/,
    child: { code: 'NOT_JSON', message: /^shared\.c1\["__proto__"\] is a key that JSON Patch refuses/ },
  },
  {
    what: 'a node puts a `__proto__` key in shared',
    flow: oneNode('codes-shared-proto', 'post', (_node, shared) => void (shared.a = protoKey())),
    code: 'NOT_JSON',
    message: /^shared\.a\["__proto__"\] is a key that JSON Patch refuses/,
  },
  {
    what: 'a node returns a `__proto__` key from prep',
    flow: oneNode('codes-prep-proto', 'prep', () => ({ a: protoKey() })),
    code: 'NOT_JSON',
    message: /prep result of 'does'\.a\["__proto__"\] is a key that JSON Patch refuses/,
  },
  {
    what: 'a node returns a `__proto__` key from exec',
    flow: oneNode('codes-exec-proto', 'exec', () => protoKey()),
    code: 'NOT_JSON',
    message: /exec result of 'does'\["__proto__"\] is a key that JSON Patch refuses/,
  },
  {
    what: 'a node sends a message with a `__proto__` key',
    flow: oneNode('codes-send-proto', 'post', (node) => node.send('codes-inbox', { body: protoKey() })),
    code: 'NOT_JSON',
    message: /message body sent to 'codes-inbox'\.body\["__proto__"\] is a key that JSON Patch refuses/,
  },
  {
    what: 'a node receives at a bad address',
    flow: oneNode('codes-receive-address', 'prep', (node) => node.receive('no spaces please')),
    code: 'INVALID_ARGUMENT',
    message: /^receive: expected `address` to be a non-empty string without spaces, got `no spaces please`/,
  },
  {
    what: 'a node sends to a bad address',
    flow: oneNode('codes-send-address', 'post', (node) => node.send('', 'hi')),
    code: 'INVALID_ARGUMENT',
    message: /^send: expected `address` to be a non-empty string/,
  },
  {
    what: 'a node receives with a bad timeout',
    flow: oneNode('codes-receive-timeout', 'prep', (node) => node.receive('codes-inbox', { timeoutMs: -1 })),
    code: 'INVALID_ARGUMENT',
    message: /^receive: expected `timeoutMs` to be a finite number/,
  },
  {
    what: 'exec throws an Error without a code',
    flow: oneNode('codes-plain-error', 'exec', () => {
      throw new Error('boom');
    }),
    code: 'NODE_FAILED',
    message: /^boom$/,
  },
  {
    what: 'post throws a TypeError',
    flow: oneNode('codes-type-error', 'post', (_node, shared) => (shared.missing as { x: number }).x),
    code: 'NODE_FAILED',
    message: /undefined/,
  },
  {
    what: 'prep throws a string',
    flow: oneNode('codes-thrown-string', 'prep', () => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- what the test is about
      throw 'not an Error';
    }),
    code: 'NODE_FAILED',
    message: /^not an Error$/,
  },
  {
    what: 'exec throws an error with a code of its own',
    flow: oneNode('codes-own-code', 'exec', () => {
      throw new CodedError('mine');
    }),
    code: 'E_MINE',
    message: /^mine$/,
  },
];

describe.each(engines)('%s: every error that ends a run has a code', (name) => {
  const setup = useEngine(name);

  it('refuses a `__proto__` key in shared or params at the start (NOT_JSON naming the path) and stores nothing', async () => {
    const { engine, stored } = await setup('codes-start', { flows: [failing[1]!.flow], workers: 0 });
    await expect(engine.start(failing[1]!.flow, { a: protoKey() })).rejects.toMatchObject({
      code: 'NOT_JSON',
      message: expect.stringMatching(/^shared\.a\["__proto__"\] is a key that JSON Patch refuses/),
    });
    await expect(engine.start(failing[1]!.flow, {}, { params: protoKey() })).rejects.toMatchObject({
      code: 'NOT_JSON',
      message: expect.stringMatching(/^params\["__proto__"\] is a key that JSON Patch refuses/),
    });
    expect(await stored()).toEqual([]);
  });

  it('refuses a message body with a `__proto__` key from engine.send', async () => {
    const { engine } = await setup('codes-engine-send', { flows: [], workers: 0 });
    await expect(engine.send('codes-inbox', { a: protoKey() })).rejects.toMatchObject({
      code: 'NOT_JSON',
      message: expect.stringMatching(/\.a\["__proto__"\] is a key that JSON Patch refuses/),
    });
    await expect(engine.send('bad address', 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(engine.send('bad address', 1)).rejects.toBeInstanceOf(TypeError);
  });

  for (const { what, flow, code, message, child } of failing) {
    it(`fails the run with ${code} when ${what}`, async () => {
      const { engine } = await setup('codes-run', { flows: [flow], autoAdvance: true });
      const result: RunResult = await engine.run(flow, {});
      expect(result.status).toBe('failed');
      expect(result.error).toMatchObject({ code, message: expect.stringMatching(message) });
      const info = (await engine.get(result.id))!;
      expect(info.error).toEqual(result.error);
      expect(info.errors.length).toBeGreaterThan(0);
      for (const record of info.errors) expect(record.code, JSON.stringify(record)).toBeDefined();
      // A fan-out parent's records hold the failed child's error.
      const last = child ?? { code, message };
      expect(info.errors.at(-1)).toMatchObject({ code: last.code, message: expect.stringMatching(last.message) });
    });
  }
});
