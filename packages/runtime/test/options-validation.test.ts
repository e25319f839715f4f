/**
 * Constructor options are checked at construction: a TypeError names the class (the subclass
 * when there is one), the option, what was expected and what was received.
 */
import { describe, expect, it } from 'vitest';
import {
  BatchNode,
  Flow,
  LocalEngine,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type LocalEngineOptions,
  type NodeOptions,
  type ParallelOptions,
} from '../src/index.js';

function thrown(fn: () => unknown): TypeError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return error as TypeError;
  }
  throw new Error('expected a TypeError, nothing was thrown');
}

describe('maxRetries validation', () => {
  it.each([
    [0, '`0` (number)'],
    [-1, '`-1` (number)'],
    [1.5, '`1.5` (number)'],
    [Number.NaN, '`NaN` (number)'],
    [Number.POSITIVE_INFINITY, '`Infinity` (number)'],
    ['3', "`'3'` (string)"],
  ])('refuses %s (positional), naming the class and the value', (value, shown) => {
    const error = thrown(() => new Node(value as number));
    expect(error.message).toBe(
      `Node: expected \`maxRetries\` to be an integer from 1 and up (the total number of tries), got ${shown}`,
    );
  });

  it('refuses a bad value in the options form too, and names the subclass', () => {
    class Summarise extends Node {
      constructor(options: NodeOptions) {
        super(options);
      }
    }
    const error = thrown(() => new Summarise({ maxRetries: 0 }));
    expect(error.message).toMatch(/^Summarise: expected `maxRetries`/);
    expect(error.message).toContain('`0` (number)');
  });

  it.each([
    ['BatchNode', () => new BatchNode(0)],
    ['ParallelBatchNode', () => new ParallelBatchNode(0)],
    ['ParallelBatchNode', () => new ParallelBatchNode({ maxRetries: -2 })],
  ])('applies to %s', (name, make) => {
    expect(thrown(make).message).toMatch(new RegExp(`^${name}: expected \`maxRetries\``));
  });

  it('accepts integers from 1; undefined means the default 1', () => {
    expect(new Node().maxRetries).toBe(1);
    expect(new Node(undefined, 0.5).maxRetries).toBe(1);
    expect(new Node(1).maxRetries).toBe(1);
    expect(new Node(10).maxRetries).toBe(10);
    expect(new Node({}).maxRetries).toBe(1);
    expect(new Node({ maxRetries: 7 }).maxRetries).toBe(7);
  });
});

describe('wait validation', () => {
  it.each([
    [-1, '`-1` (number)'],
    [-0.001, '`-0.001` (number)'],
    [Number.NaN, '`NaN` (number)'],
    [Number.POSITIVE_INFINITY, '`Infinity` (number)'],
    ['1', "`'1'` (string)"],
  ])('refuses %s, naming the class and the value', (value, shown) => {
    const error = thrown(() => new Node(2, value as number));
    expect(error.message).toBe(`Node: expected \`wait\` to be a finite number of seconds from 0 and up, got ${shown}`);
    const viaOptions = thrown(() => new BatchNode({ wait: value as number }));
    expect(viaOptions.message).toMatch(/^BatchNode: expected `wait`/);
  });

  it('accepts finite numbers from 0 (seconds); undefined means 0', () => {
    expect(new Node().wait).toBe(0);
    expect(new Node(2, 0).wait).toBe(0);
    expect(new Node(2, 0.25).wait).toBe(0.25);
    expect(new Node({ wait: 3 }).wait).toBe(3);
  });
});

describe('waitMs: the pause between tries in milliseconds', () => {
  it('is wait in seconds under another unit', () => {
    expect(new Node({ maxRetries: 3, waitMs: 500 }).wait).toBe(0.5);
    expect(new Node({ waitMs: 0 }).wait).toBe(0);
    expect(new ParallelBatchNode({ concurrency: 2, waitMs: 1500 }).wait).toBe(1.5);
    expect(new Node({ maxRetries: 2, waitMs: 250 }).retryDelayMs(0)).toBe(250);
  });

  it('refuses both wait and waitMs, naming both values', () => {
    expect(thrown(() => new Node({ wait: 1, waitMs: 500 })).message).toBe(
      'Node: give `wait` (seconds) or `waitMs` (milliseconds), not both; got wait `1` (number) and waitMs `500` (number)',
    );
    expect(thrown(() => new BatchNode({ wait: 0, waitMs: 0 })).message).toMatch(/^BatchNode: give `wait`/);
  });

  it.each([
    [-1, '`-1` (number)'],
    [Number.NaN, '`NaN` (number)'],
    ['500', "`'500'` (string)"],
  ])('refuses %s, naming the class and the value', (value, shown) => {
    expect(thrown(() => new Node({ waitMs: value as number })).message).toBe(
      `Node: expected \`waitMs\` to be a finite number of milliseconds from 0 and up, got ${shown}`,
    );
  });
});

describe('concurrency validation', () => {
  it.each([
    [0, '`0` (number)'],
    [-1, '`-1` (number)'],
    [2.5, '`2.5` (number)'],
    [Number.NaN, '`NaN` (number)'],
    [Number.POSITIVE_INFINITY, '`Infinity` (number)'],
    ['4', "`'4'` (string)"],
  ])('refuses %s on ParallelBatchNode and ParallelBatchFlow', (value, shown) => {
    const options = { concurrency: value } as unknown as ParallelOptions;
    expect(thrown(() => new ParallelBatchNode(options)).message).toBe(
      `ParallelBatchNode: expected \`concurrency\` to be an integer from 1 and up, got ${shown}`,
    );
    expect(thrown(() => new ParallelBatchFlow(new Node(), options)).message).toBe(
      `ParallelBatchFlow: expected \`concurrency\` to be an integer from 1 and up, got ${shown}`,
    );
  });

  it('names the subclass', () => {
    class Fetch extends ParallelBatchNode {}
    expect(thrown(() => new Fetch({ concurrency: 0 })).message).toMatch(/^Fetch: expected `concurrency`/);
  });

  it('accepts integers from 1; undefined means unbounded', () => {
    expect(new ParallelBatchNode().concurrency).toBeUndefined();
    expect(new ParallelBatchNode({ concurrency: 1 }).concurrency).toBe(1);
    expect(new ParallelBatchNode({ concurrency: 64, maxRetries: 3, wait: 0.1 }).maxRetries).toBe(3);
    expect(new ParallelBatchFlow(new Node(), { concurrency: 2 }).concurrency).toBe(2);
    expect(new ParallelBatchFlow(new Node()).concurrency).toBeUndefined();
  });

  it('onItemError accepts only fail-fast or collect', () => {
    expect(new ParallelBatchNode().onItemError).toBe('fail-fast');
    expect(new ParallelBatchNode({ onItemError: 'collect' }).onItemError).toBe('collect');
    const bad = { onItemError: 'ignore' } as unknown as ParallelOptions;
    expect(thrown(() => new ParallelBatchNode(bad)).message).toMatch(/onItemError.*ignore/);
    expect(thrown(() => new ParallelBatchFlow(new Node(), bad)).message).toMatch(/^ParallelBatchFlow: .*onItemError/);
  });
});

describe('other options', () => {
  it('timeoutMs must be an integer from 1 (milliseconds)', () => {
    expect(new Node({ timeoutMs: 100 }).timeoutMs).toBe(100);
    expect(thrown(() => new Node({ timeoutMs: 0 })).message).toBe(
      'Node: expected `timeoutMs` to be an integer from 1 and up, got `0` (number)',
    );
    expect(thrown(() => new Node({ timeoutMs: 1.5 })).message).toContain('`1.5` (number)');
  });

  it('backoff must be a known type with jitter in [0, 1] and maxDelayMs ≥ 0', () => {
    expect(new Node({ backoff: { type: 'exponential', jitter: 0.5, maxDelayMs: 1000 } }).backoff).toEqual({
      type: 'exponential',
      jitter: 0.5,
      maxDelayMs: 1000,
    });
    const bad = (backoff: unknown): NodeOptions => ({ backoff }) as NodeOptions;
    expect(thrown(() => new Node(bad({ type: 'linear' }))).message).toBe(
      "Node: expected `backoff.type` to be 'fixed' or 'exponential', got `'linear'` (string)",
    );
    expect(thrown(() => new Node(bad(null))).message).toContain('`null` (null)');
    expect(thrown(() => new Node(bad({ type: 'fixed', jitter: 1.5 }))).message).toContain('backoff.jitter');
    expect(thrown(() => new Node(bad({ type: 'fixed', maxDelayMs: -1 }))).message).toContain('backoff.maxDelayMs');
  });

  it('name must be a non-empty string', () => {
    expect(new Node({ name: 'fetch' }).name).toBe('fetch');
    expect(thrown(() => new Node({ name: '' })).message).toBe(
      "Node: expected `name` to be a non-empty string, got `''` (string)",
    );
    expect(new Flow(new Node(), { name: 'main' }).name).toBe('main');
    expect(thrown(() => new Flow(new Node(), { name: '' })).message).toMatch(/^Flow: expected `name`/);
  });

  it('a Flow needs a node to start from', () => {
    expect(thrown(() => new Flow(undefined as unknown as Node)).message).toBe(
      'Flow: expected `start` to be a node (BaseNode), got `undefined` (undefined)',
    );
    expect(thrown(() => new Flow({} as unknown as Node)).message).toMatch(/^Flow: expected `start`/);
  });

  it('an engine needs its flows: an array or a module of them, named when missing', () => {
    const options = {} as unknown as LocalEngineOptions;
    expect(thrown(() => new LocalEngine(options)).message).toBe(
      'flows: expected `flows` to be an array of FlowDefinitions made by defineFlow, or a module of them, got `undefined` (undefined)',
    );
  });
});

describe('unknown option names (issue 31: no silent typos)', () => {
  function refused(fn: () => unknown): { code?: string; message: string } {
    try {
      fn();
    } catch (error) {
      return error as { code?: string; message: string };
    }
    throw new Error('expected the constructor to throw');
  }

  it('a node refuses a misspelt option, naming it and the closest known name', () => {
    const error = refused(() => new Node({ limts: [] } as NodeOptions));
    expect(error.code).toBe('INVALID_OPTION');
    expect(error.message).toBe("Node: unknown option 'limts'; did you mean 'limits'?");
  });

  it('names the subclass, and lists the known names when none is close', () => {
    class Summarise extends Node {}
    const error = refused(() => new Summarise({ temperature: 0.2 } as NodeOptions));
    expect(error.code).toBe('INVALID_OPTION');
    expect(error.message).toMatch(/^Summarise: unknown option 'temperature'; known options: 'maxRetries', 'wait', /);
  });

  it('batch classes know their own options; flows refuse unknown ones too', () => {
    expect(() => new ParallelBatchNode({ concurrency: 2, onItemError: 'collect' })).not.toThrow();
    expect(refused(() => new ParallelBatchNode({ concurency: 2 } as ParallelOptions)).message).toBe(
      "ParallelBatchNode: unknown option 'concurency'; did you mean 'concurrency'?",
    );
    expect(() => new ParallelBatchFlow(new Node(), { name: 'p', concurrency: 2 })).not.toThrow();
    const flow = refused(() => new Flow(new Node(), { nmae: 'x' } as never));
    expect(flow).toMatchObject({
      code: 'INVALID_OPTION',
      message: "Flow: unknown option 'nmae'; did you mean 'name'?",
    });
  });

  it('a subclass that takes options of its own adds their names', () => {
    class Model extends Node {
      static override optionNames = [...Node.optionNames, 'model'];
      readonly model: string;
      constructor(options: NodeOptions & { model: string }) {
        super(options);
        this.model = options.model;
      }
    }
    expect(new Model({ model: 'gpt', maxRetries: 2 }).model).toBe('gpt');
    expect(refused(() => new Model({ model: 'gpt', maxRetires: 2 } as never)).message).toBe(
      "Model: unknown option 'maxRetires'; did you mean 'maxRetries'?",
    );
  });

  it('the positional form has nothing to check', () => {
    expect(new Node(3, 0.5).maxRetries).toBe(3);
  });
});
