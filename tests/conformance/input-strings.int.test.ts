/**
 * Contract: strings that name something in the store are refused with INVALID_OPTION before
 * anything is written (issue 32, items 4 and 7), on both engines.
 *
 * - Not well-formed Unicode (a lone surrogate: Redis stores UTF-8, where it has no encoding, so
 *   Node writes U+FFFD and `k-\uD800` and `k-\uDBFF` would name one key): idempotency keys,
 *   addresses (`engine.send`, `engine.answer`, `this.send`, `this.receive`, `replyTo`), budget
 *   keys and run ids.
 * - Run ids holding `:` (no run id does; `<id>:stream` names another key of the run, which the
 *   Redis engine read as a run and answered with a raw WRONGTYPE, or waited out a timeout).
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, type Engine, type JsonObject } from '@queueflow/runtime';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

class Emits extends Node<S> {
  override post(shared: S): void {
    this.emit('hello');
    shared.done = true;
  }
}
const emits = defineFlow('strings-emits', () => new Flow(new Emits({ name: 'emits' })));

/** A node that does `body` in `prep`. */
class Does extends Node<S> {
  constructor(private readonly body: (node: Does) => Promise<unknown>) {
    super({ name: 'does' });
  }
  override async prep(): Promise<unknown> {
    await this.body(this);
    return undefined;
  }
}
const receivesLone = defineFlow('strings-receive', () => new Flow(new Does((node) => node.receive('box-\uDC00'))));
const sendsLone = defineFlow('strings-send', () => new Flow(new Does((node) => node.send('box-\uD800', 1))));
const repliesLone = defineFlow(
  'strings-reply-to',
  () => new Flow(new Does((node) => node.send('box', 1, { replyTo: 'back-\uDBFF' }))),
);
const limitedLone = defineFlow(
  'strings-limit',
  () =>
    new Flow(
      new (class extends Node<S> {
        override exec(): string {
          return 'ran';
        }
      })({ name: 'limited', limits: [{ key: (params: S) => `tenant-${String(params.tenant)}`, concurrency: 1 }] }),
    ),
);
const flows = [emits, receivesLone, sendsLone, repliesLone, limitedLone];

async function refused(call: () => Promise<unknown>, what: RegExp): Promise<void> {
  const error = await call().then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, `expected a refusal matching ${what}`).toMatchObject({ code: 'INVALID_OPTION', message: what });
}

/** Every engine method that takes a run id, called with `id`. */
function runIdCalls(engine: Engine, id: string): [string, () => Promise<unknown>][] {
  return [
    ['get', () => engine.get(id)],
    ['cancel', () => engine.cancel(id)],
    ['history', () => engine.history(id)],
    ['retry', () => engine.retry(id)],
    ['result', () => engine.result(id, { timeoutMs: 60_000 })],
    ['sharedAt', () => engine.sharedAt(id, 0)],
    ['fork', () => engine.fork(id, { step: 0 })],
    ['children', () => engine.children(id)],
    ['stream', () => engine.stream(id)[Symbol.asyncIterator]().next()],
  ];
}

describe.each(engines)('%s: strings that name things in the store', (name) => {
  const setup = useEngine(name);

  it('refuses idempotency keys, addresses and run ids that are not well-formed Unicode, and writes nothing', async () => {
    const { engine, stored } = await setup('strings-lone', { flows, workers: 0 });
    await refused(() => engine.start(emits, {}, { idempotencyKey: 'k-\uD800' }), /idempotencyKey.*lone surrogate/);
    await refused(() => engine.start(emits, {}, { idempotencyKey: 'k-\uDBFF' }), /idempotencyKey.*lone surrogate/);
    await refused(() => engine.send('box-\uD800', 1), /address.*lone surrogate/);
    await refused(() => engine.answer('box-\uDC00', 'm.1', 1), /address.*lone surrogate/);
    await refused(() => engine.answer('box', 'm.\uDC00', 1), /messageId.*lone surrogate/);
    for (const [method, call] of runIdCalls(engine, 'run-\uD800'))
      await refused(call, new RegExp(`${method}.*runId.*lone surrogate`));
    expect(await stored()).toEqual([]);
  });

  it('refuses run ids holding `:` with INVALID_OPTION, however the store names its keys', async () => {
    const { engine } = await setup('strings-colon', { flows });
    const handle = await engine.start<S>(emits, {});
    expect((await handle.result()).status).toBe('completed');
    for (const suffix of [':stream', ':history', ':x']) {
      for (const [method, call] of runIdCalls(engine, `${handle.id}${suffix}`))
        await refused(call, new RegExp(`${method}.*runId.*':'`));
    }
    expect((await engine.get(handle.id))?.status).toBe('completed');
  });

  it('fails a run whose node sends to, receives from, or names a budget key that is not well-formed Unicode with INVALID_OPTION', async () => {
    const { engine } = await setup('strings-in-run', { flows });
    const cases: [typeof receivesLone, JsonObject, RegExp][] = [
      [receivesLone, {}, /receive.*address.*lone surrogate/],
      [sendsLone, {}, /send.*address.*lone surrogate/],
      [repliesLone, {}, /send.*replyTo.*lone surrogate/],
      [limitedLone, { tenant: 'a\uD800' }, /limits\[\]\.key\(params\).*lone surrogate/],
    ];
    for (const [flow, params, message] of cases) {
      const result = await engine.run(flow, {}, { params });
      expect(result.status, flow.name).toBe('failed');
      expect(result.error, flow.name).toMatchObject({ code: 'INVALID_OPTION', message });
    }
  });

  it('refuses a budget key that is not well-formed Unicode when the node is made', () => {
    expect(() => new Node({ limits: [{ key: 'k-\uD800', concurrency: 1 }] })).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTION',
        message: expect.stringMatching(/limits\[0\]\.key.*lone surrogate/),
      }),
    );
  });
});
