/**
 * Typing of the public generics: S (the shared store) and P (params) flow through the classes.
 * The `expectTypeOf` assertions and `@ts-expect-error` lines are checked by `tsc -p
 * tsconfig.json` (the test folder is included); at run time they are no-ops, and the test below
 * also runs the typed flow once.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  AsyncFlow,
  BatchFlow,
  BatchNode,
  DEFAULT_ACTION,
  Flow,
  Node,
  ParallelBatchNode,
  backoffDelayMs,
  ParallelBatchFlow,
  type Action,
  type NonIterableObject,
} from '../src/index.js';
import { captureWarnings } from './helpers.js';

interface Store {
  text: string;
  words?: number;
}
interface Params extends NonIterableObject {
  lang: string;
}

class Count extends Node<Store, Params> {
  override prep(shared: Store): string {
    expectTypeOf(shared).toEqualTypeOf<Store>();
    expectTypeOf(this.params).toEqualTypeOf<Params>();
    expectTypeOf(this.params.lang).toEqualTypeOf<string>();
    return shared.text;
  }
  override exec(text: string): number {
    expectTypeOf(this.currentRetry).toEqualTypeOf<number>();
    return text.split(' ').length;
  }
  override post(shared: Store, _prepRes: string, words: number): Action {
    shared.words = words;
    return 'counted';
  }
}

class Other extends Node<Store> {}

describe('generics', () => {
  captureWarnings();

  it('type S (shared) and P (params) flow through nodes and flows', async () => {
    const count = new Count();
    expectTypeOf(count.params).toEqualTypeOf<Params>();
    expectTypeOf(count.setParams).parameter(0).toEqualTypeOf<Params>();
    expectTypeOf(count.setParams({ lang: 'en' })).toEqualTypeOf<Count>();
    // @ts-expect-error: params must match P
    count.setParams({ language: 'en' });
    // @ts-expect-error: P's fields are typed
    count.setParams({ lang: 42 });

    expectTypeOf(count.run).parameter(0).toEqualTypeOf<Store>();
    expectTypeOf(count.run({ text: 'a b' })).toEqualTypeOf<Promise<Action | undefined>>();
    // Compile-time only: never called.
    const compileOnly = (): void => {
      // @ts-expect-error: shared must be a Store
      void count.run({ txt: 'a b' });
    };

    const flow = new Flow<Store, Params>(count);
    expectTypeOf(flow.run).parameter(0).toEqualTypeOf<Store>();
    expectTypeOf(flow.params).toEqualTypeOf<Params>();
    const compileOnlyFlow = (): void => {
      // @ts-expect-error: shared must be a Store
      void flow.run({});
    };
    expect([compileOnly, compileOnlyFlow]).toHaveLength(2);

    const shared: Store = { text: 'one two three' };
    flow.setParams({ lang: 'en' });
    expect(await flow.run(shared)).toBe('counted');
    expect(shared.words).toBe(3);
  });

  it('params may be a plain interface (no index signature), and a flow infers S and P from its start node', () => {
    interface Lang {
      lang: string;
    }
    class Translate extends Node<Store, Lang> {
      override exec(): string {
        expectTypeOf(this.params.lang).toEqualTypeOf<string>();
        return this.params.lang;
      }
    }
    const flow = new Flow(new Translate());
    expectTypeOf(flow).toEqualTypeOf<Flow<Store, Lang>>();
    expectTypeOf(flow.run).parameter(0).toEqualTypeOf<Store>();
    flow.setParams({ lang: 'fr' });
    // @ts-expect-error: the params of the start node
    flow.setParams({ language: 'fr' });
    expectTypeOf(new BatchFlow(new Translate())).toEqualTypeOf<BatchFlow<Store, Lang>>();
    expectTypeOf(new ParallelBatchFlow(new Translate(), { concurrency: 2 })).toEqualTypeOf<
      ParallelBatchFlow<Store, Lang>
    >();
    expectTypeOf(new Flow(new Other())).toEqualTypeOf<Flow<Store, NonIterableObject>>();
    // With type arguments any start node is accepted, as in PocketFlow.
    expectTypeOf(new Flow<{ other: true }>(new Translate())).toEqualTypeOf<Flow<{ other: true }, NonIterableObject>>();
    // @ts-expect-error: still no arrays as params
    type Bad = Node<Store, string[]>;
    expectTypeOf<Bad>().not.toBeAny();
  });

  it('next returns its argument’s type, on returns this', () => {
    const count = new Count();
    const other = new Other();
    expectTypeOf(count.next(other)).toEqualTypeOf<Other>();
    expectTypeOf(count.on('x', other)).toEqualTypeOf<Count>();
    expectTypeOf(count.next(new Flow<Store>(other))).toEqualTypeOf<Flow<Store>>();
    expectTypeOf(count.clone()).toEqualTypeOf<Count>();
    expectTypeOf(DEFAULT_ACTION).toEqualTypeOf<Action>();
    expectTypeOf<Action>().toEqualTypeOf<string>();
  });

  it('params are plain objects, never arrays or other iterables', () => {
    const node = new Node();
    // @ts-expect-error: an array is not a param object
    node.setParams([1, 2]);
    // @ts-expect-error: nor is a Map
    node.setParams(new Map());
    node.setParams({ any: 'thing' });
    // @ts-expect-error: P must be a NonIterableObject
    type Bad = Node<unknown, string[]>;
    expectTypeOf<Bad>().not.toBeAny();
  });

  it('lifecycle methods are checked: post returns an action, overrides must exist in the base', () => {
    class BadPost extends Node<Store> {
      // @ts-expect-error: post must return a string, undefined or nothing
      override post(): number {
        return 1;
      }
    }
    class Misspelled extends Node<Store> {
      // @ts-expect-error: `exce` is not a lifecycle method (noImplicitOverride + override)
      override exce(): void {}
    }
    expect([BadPost, Misspelled]).toHaveLength(2);
  });

  it('PocketFlow-style async overrides type-check against queueflow', () => {
    type SharedStorage = { input: string; output?: string };
    class Upper extends Node<SharedStorage> {
      override async prep(shared: SharedStorage): Promise<string> {
        return shared.input;
      }
      override async exec(input: string): Promise<string> {
        return input.toUpperCase();
      }
      override async execFallback(_prepRes: unknown, error: Error): Promise<string> {
        return error.message;
      }
      override async post(shared: SharedStorage, _p: unknown, execRes: unknown): Promise<string | undefined> {
        shared.output = execRes as string;
        return undefined;
      }
    }
    expectTypeOf(new AsyncFlow<SharedStorage>(new Upper()).runAsync).parameter(0).toEqualTypeOf<SharedStorage>();
  });

  it('batch classes keep S and P; options are typed', () => {
    class Items extends BatchNode<Store> {
      override prep(shared: Store): string[] {
        return shared.text.split(' ');
      }
    }
    expectTypeOf(new Items().run).parameter(0).toEqualTypeOf<Store>();
    expectTypeOf(new BatchFlow<Store>(new Items()).run).parameter(0).toEqualTypeOf<Store>();
    new ParallelBatchNode({ concurrency: 2, maxRetries: 3, wait: 0.5, timeoutMs: 1000 });
    // @ts-expect-error: unknown option (and refused at run time too)
    expect(() => new ParallelBatchNode({ parallelism: 2 })).toThrow(/unknown option 'parallelism'/);
    // @ts-expect-error: backoff type is a union (and refused at run time too)
    expect(() => new Node({ backoff: { type: 'linear' } })).toThrow(TypeError);
    expectTypeOf(backoffDelayMs(0, 1, undefined)).toEqualTypeOf<number>();
  });
});
