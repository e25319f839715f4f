/**
 * Drop-in compatibility with the PocketFlow TypeScript port (npm `pocketflow`).
 *
 * The flows below are written once, the way a user of the port writes them (`class X extends
 * Node<SharedStorage>`, `async prep/exec/post`, `this._params`, `new Flow(start)`, `next`/`on`,
 * `setParams`, `clone`, `currentRetry`, `new Node(maxRetries, wait)`), against an import alias
 * typed with the port's own declarations. Each scenario runs on `pocketflow` and on queueflow
 * and must give the same results — except where DESIGN.md says the Python reference wins:
 * S7, a Flow's default `post` returns the last action of its walk (so `await flow.run()` returns
 * it and a nested flow branches its parent), where the port returns `undefined`. Those
 * differences are asserted explicitly.
 *
 * The port warns through `console.warn`; queueflow through its warning channel. Both are
 * captured and compared by message.
 *
 * (`override` on the lifecycle methods is only there because this repository compiles with
 * `noImplicitOverride`; the port's users without that flag write the same code without it.)
 */
import * as pocketflow from 'pocketflow';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as queueflow from '../src/index.js';

type PocketFlowModule = typeof pocketflow;

// The user's code below is type-checked against the port's declarations (it is their code,
// unchanged); queueflow's classes are passed in its place. The same style type-checks against
// queueflow's own declarations too: see generics.test.ts.
const libraries: ReadonlyArray<readonly ['pocketflow' | 'queueflow', PocketFlowModule]> = [
  ['pocketflow', pocketflow],
  ['queueflow', queueflow as unknown as PocketFlowModule],
];

interface Outcome {
  result: unknown;
  shared: unknown;
  warnings: string[];
}

/** Runs `fn`, collecting the warnings of both libraries' channels. */
async function observe(fn: () => Promise<{ result: unknown; shared: unknown }>): Promise<Outcome> {
  const warnings: string[] = [];
  const spy = vi.spyOn(console, 'warn').mockImplementation((message: unknown) => {
    warnings.push(String(message));
  });
  queueflow.setWarningHandler((_code, message) => warnings.push(message));
  try {
    const { result, shared } = await fn();
    return { result, shared, warnings };
  } finally {
    spy.mockRestore();
    queueflow.setWarningHandler(null);
  }
}

/** The user's program, written once against the port's API. */
function userProgram(lib: PocketFlowModule) {
  const { Node, Flow, BatchNode, BatchFlow, ParallelBatchNode, ParallelBatchFlow } = lib;

  // ---- a linear pipeline --------------------------------------------------------------------
  type TextStore = { input: string; upper?: string; words?: number; saved?: string[] };

  class Uppercase extends Node<TextStore> {
    override async prep(shared: TextStore): Promise<string> {
      return shared.input;
    }
    override async exec(text: string): Promise<string> {
      return text.toUpperCase();
    }
    override async post(shared: TextStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.upper = execRes as string;
      return undefined;
    }
  }
  class CountWords extends Node<TextStore> {
    override async prep(shared: TextStore): Promise<string> {
      return shared.upper ?? '';
    }
    override async exec(text: string): Promise<number> {
      return text.split(/\s+/).length;
    }
    override async post(shared: TextStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.words = execRes as number;
      return 'default';
    }
  }
  class Save extends Node<TextStore> {
    override async post(shared: TextStore): Promise<string | undefined> {
      shared.saved = [shared.upper ?? '', String(shared.words)];
      return 'saved';
    }
  }

  // ---- an agent loop --------------------------------------------------------------------------
  type AgentStore = { question: string; searches: number; context: string[]; answer?: string };

  class Decide extends Node<AgentStore> {
    override async prep(shared: AgentStore): Promise<number> {
      return shared.context.length;
    }
    override async exec(contextSize: number): Promise<string> {
      return contextSize < 3 ? 'search' : 'answer';
    }
    override async post(_shared: AgentStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      return execRes as string;
    }
  }
  class Search extends Node<AgentStore> {
    override async exec(): Promise<string> {
      return 'fact';
    }
    override async post(shared: AgentStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.searches++;
      shared.context.push(`${execRes as string} ${shared.searches}`);
      return 'decide';
    }
  }
  class Answer extends Node<AgentStore> {
    override async prep(shared: AgentStore): Promise<string[]> {
      return shared.context;
    }
    override async exec(context: string[]): Promise<string> {
      return context.join(', ');
    }
    override async post(shared: AgentStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.answer = execRes as string;
      return 'done';
    }
  }
  function agentFlow() {
    const decide = new Decide();
    const search = new Search();
    const answer = new Answer();
    decide.on('search', search);
    decide.on('answer', answer);
    search.on('decide', decide);
    return new Flow(decide);
  }

  // ---- retries ----------------------------------------------------------------------------------
  type RetryStore = { tries: number[]; result?: unknown };

  class Flaky extends Node<RetryStore> {
    constructor() {
      super(3, 0.001); // 3 tries in all, 1 ms apart
    }
    override async prep(shared: RetryStore): Promise<RetryStore> {
      return shared;
    }
    override async exec(shared: RetryStore): Promise<string> {
      shared.tries.push(this.currentRetry);
      if (this.currentRetry < 2) throw new Error(`try ${this.currentRetry} failed`);
      return `ok after ${this.currentRetry + 1} tries`;
    }
    override async post(shared: RetryStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.result = execRes;
      return undefined;
    }
  }
  class AlwaysFails extends Node<RetryStore> {
    override async prep(shared: RetryStore): Promise<RetryStore> {
      return shared;
    }
    override async exec(shared: RetryStore): Promise<string> {
      shared.tries.push(this.currentRetry);
      throw new Error(`failure ${this.currentRetry}`);
    }
    override async execFallback(_prepRes: unknown, error: Error): Promise<string> {
      return `fallback: ${error.message}`;
    }
    override async post(shared: RetryStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.result = execRes;
      return undefined;
    }
  }
  class NoFallback extends Node<RetryStore> {
    override async exec(): Promise<string> {
      throw new Error('no fallback here');
    }
  }

  // ---- params -----------------------------------------------------------------------------------
  type GreetStore = { greetings: string[] };
  type GreetParams = { name: string; punctuation?: string };

  class Greet extends Node<GreetStore, GreetParams> {
    override async prep(): Promise<string> {
      return `Hello, ${this._params.name}${this._params.punctuation ?? '.'}`;
    }
    override async post(shared: GreetStore, prepRes: unknown): Promise<string | undefined> {
      shared.greetings.push(prepRes as string);
      return undefined;
    }
    paramsForTest(): GreetParams {
      return this._params;
    }
  }

  // ---- batches ----------------------------------------------------------------------------------
  type BatchStore = {
    text: string;
    files: string[];
    chunks?: unknown;
    results: Record<string, string>;
    log: string[];
    postArgs?: unknown[];
  };

  class ChunkLengths extends BatchNode<BatchStore> {
    override async prep(shared: BatchStore): Promise<string[]> {
      return shared.text.split(' ');
    }
    override async exec(chunk: unknown): Promise<number> {
      return (chunk as string).length;
    }
    override async post(shared: BatchStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.chunks = execRes;
      return undefined;
    }
  }
  class SlowDouble extends ParallelBatchNode<BatchStore> {
    override async prep(): Promise<number[]> {
      return [1, 2, 3, 4];
    }
    override async exec(item: unknown): Promise<number> {
      // Later items finish first.
      await new Promise((resolve) => setTimeout(resolve, 5 - (item as number)));
      return (item as number) * 2;
    }
    override async post(shared: BatchStore, _prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.chunks = execRes;
      return undefined;
    }
  }
  class Summarise extends Node<BatchStore> {
    override async prep(): Promise<string> {
      return String(this._params.file);
    }
    override async exec(file: string): Promise<string> {
      return `summary of ${file}`;
    }
    override async post(shared: BatchStore, prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.results[prepRes as string] = execRes as string;
      shared.log.push(prepRes as string);
      return undefined;
    }
  }
  class PerFile extends BatchFlow<BatchStore> {
    override async prep(shared: BatchStore): Promise<{ file: string }[]> {
      return shared.files.map((file) => ({ file }));
    }
    override async post(shared: BatchStore, prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.postArgs = [prepRes, execRes];
      return undefined;
    }
  }
  class PerFileInParallel extends ParallelBatchFlow<BatchStore> {
    override async prep(shared: BatchStore): Promise<{ file: string }[]> {
      return shared.files.map((file) => ({ file }));
    }
  }
  class Leaf extends Node<BatchStore> {
    override async post(shared: BatchStore): Promise<string | undefined> {
      shared.log.push(JSON.stringify(this._params));
      return undefined;
    }
  }
  class Outer extends BatchFlow<BatchStore> {
    override async prep(): Promise<Record<string, unknown>[]> {
      return [{ dir: 'a', level: 'outer' }, { dir: 'b' }];
    }
  }
  class Inner extends BatchFlow<BatchStore> {
    override async prep(): Promise<Record<string, unknown>[]> {
      return [{ page: 1, level: 'inner' }, { page: 2 }];
    }
  }

  // ---- flows of flows ---------------------------------------------------------------------------
  type ReviewStore = { log: string[] };

  class Step extends Node<ReviewStore> {
    constructor(
      private readonly tag: string,
      private readonly action?: string,
    ) {
      super();
    }
    override async post(shared: ReviewStore): Promise<string | undefined> {
      shared.log.push(this.tag);
      return this.action;
    }
  }
  class Wrapped extends Flow<ReviewStore> {
    override async prep(shared: ReviewStore): Promise<string> {
      shared.log.push('flow prep');
      return 'prepRes';
    }
    override async post(shared: ReviewStore, prepRes: unknown, execRes: unknown): Promise<string | undefined> {
      shared.log.push(`flow post(${String(prepRes)}, ${String(execRes)})`);
      return 'wrapped';
    }
  }
  class ExplicitPost extends Flow<ReviewStore> {
    override async post(): Promise<string | undefined> {
      return 'approved';
    }
  }

  return {
    async pipeline() {
      const load = new Uppercase();
      load.next(new CountWords()).next(new Save());
      const shared: TextStore = { input: 'the quick brown fox' };
      const result = await new Flow(load).run(shared);
      return { result, shared };
    },
    async agent() {
      const shared: AgentStore = { question: 'q', searches: 0, context: [] };
      const result = await agentFlow().run(shared);
      return { result, shared };
    },
    async retries() {
      const shared: RetryStore = { tries: [] };
      const result = await new Flaky().run(shared);
      return { result, shared };
    },
    async fallback() {
      const shared: RetryStore = { tries: [] };
      const node = new AlwaysFails(2, 0);
      const result = await new Flow(node).run(shared);
      return { result: [result, node.maxRetries, node.wait], shared };
    },
    async failure() {
      const shared: RetryStore = { tries: [] };
      const error = await new Flow(new NoFallback(2)).run(shared).catch((e: unknown) => e);
      return { result: (error as Error).message, shared };
    },
    async params() {
      const shared: GreetStore = { greetings: [] };
      const greet = new Greet();
      greet.setParams({ name: 'node' });
      await greet.run(shared);
      const flow = new Flow(greet);
      flow.setParams({ name: 'Ada', punctuation: '!' });
      const result = await flow.run(shared);
      return { result: [result, greet.paramsForTest()], shared };
    },
    async clone() {
      const greet = new Greet();
      greet.setParams({ name: 'original' });
      const copy = greet.clone();
      copy.setParams({ name: 'copy' });
      const shared: GreetStore = { greetings: [] };
      await copy.run(shared);
      await greet.run(shared);
      return {
        result: [copy instanceof Greet, copy !== greet, greet.paramsForTest(), copy.paramsForTest()],
        shared,
      };
    },
    async batchNode() {
      const shared: BatchStore = { text: 'a bb ccc', files: [], results: {}, log: [] };
      const result = await new ChunkLengths().run(shared);
      return { result, shared };
    },
    async parallelBatchNode() {
      const shared: BatchStore = { text: '', files: [], results: {}, log: [] };
      const result = await new SlowDouble().run(shared);
      return { result, shared };
    },
    async batchFlow() {
      const shared: BatchStore = { text: '', files: ['x.md', 'y.md', 'z.md'], results: {}, log: [] };
      const result = await new PerFile(new Summarise()).run(shared);
      return { result, shared };
    },
    async parallelBatchFlow() {
      const shared: BatchStore = { text: '', files: ['x.md', 'y.md', 'z.md'], results: {}, log: [] };
      const result = await new PerFileInParallel(new Summarise()).run(shared);
      return { result, shared: { ...shared, log: [...shared.log].sort() } };
    },
    async nestedBatchFlows() {
      const shared: BatchStore = { text: '', files: [], results: {}, log: [] };
      const outer = new Outer(new Inner(new Leaf()));
      outer.setParams({ run: 1, level: 'flow' });
      const result = await outer.run(shared);
      return { result, shared };
    },
    async flowPrepPost() {
      const a = new Step('a');
      a.next(new Step('b', 'b-done'));
      const shared: ReviewStore = { log: [] };
      const result = await new Wrapped(a).run(shared);
      return { result, shared };
    },
    async nestedFlowDefaultPost() {
      // The inner walk ends on 'approved'. Which way does the parent go?
      const inner = new Flow(new Step('review', 'approved'));
      inner.next(new Step('after: default'));
      inner.on('approved', new Step('after: approved'));
      const start = new Step('start');
      start.next(inner);
      const shared: ReviewStore = { log: [] };
      const result = await new Flow(start).run(shared);
      return { result, shared };
    },
    async nestedFlowExplicitPost() {
      const inner = new ExplicitPost(new Step('review'));
      inner.next(new Step('after: default'));
      inner.on('approved', new Step('after: approved'));
      const shared: ReviewStore = { log: [] };
      const result = await new Flow(inner).run(shared);
      return { result, shared };
    },
    async warnings() {
      const shared: ReviewStore = { log: [] };
      const a = new Step('a', 'elsewhere');
      a.next(new Step('first'));
      a.next(new Step('second')); // overwrite
      const ranAlone = await a.run(shared); // has successors: runs alone
      const result = await new Flow(a).run(shared); // 'elsewhere' not found
      return { result: [ranAlone, result], shared };
    },
  };
}

type Scenario = keyof ReturnType<typeof userProgram>;

async function both(scenario: Scenario): Promise<{ pocketflow: Outcome; queueflow: Outcome }> {
  const outcomes = {} as Record<'pocketflow' | 'queueflow', Outcome>;
  for (const [name, lib] of libraries) {
    outcomes[name] = await observe(() => userProgram(lib)[scenario]());
  }
  return outcomes;
}

describe('PocketFlow TypeScript port compatibility', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('exports the port’s class names', () => {
    for (const name of Object.keys(pocketflow)) {
      expect(typeof (queueflow as Record<string, unknown>)[name], name).toBe(
        typeof (pocketflow as Record<string, unknown>)[name],
      );
    }
  });

  it('a linear pipeline: same shared; both return undefined when the last post does', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('pipeline');
    expect(theirs.shared).toEqual({
      input: 'the quick brown fox',
      upper: 'THE QUICK BROWN FOX',
      words: 4,
      saved: ['THE QUICK BROWN FOX', '4'],
    });
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.warnings).toEqual(theirs.warnings);
    expect(theirs.warnings).toEqual([]);
    // S7: the walk's last action is 'saved'. The Python reference (and queueflow) return it from
    // flow.run; the port's Flow.post returns undefined.
    expect(theirs.result).toBeUndefined();
    expect(ours.result).toBe('saved');
  });

  it('an agent loop with named actions: same shared, same warnings; S7 difference on the return value', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('agent');
    expect(theirs.shared).toEqual({
      question: 'q',
      searches: 3,
      context: ['fact 1', 'fact 2', 'fact 3'],
      answer: 'fact 1, fact 2, fact 3',
    });
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.warnings).toEqual(theirs.warnings);
    expect(theirs.result).toBeUndefined();
    expect(ours.result).toBe('done');
  });

  it('new Node(3, wait) with currentRetry: same tries, same result', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('retries');
    expect(theirs.shared).toEqual({ tries: [0, 1, 2], result: 'ok after 3 tries' });
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it('execFallback gets the last error and its value reaches post', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('fallback');
    expect(theirs.shared).toEqual({ tries: [0, 1], result: 'fallback: failure 1' });
    expect(ours.shared).toEqual(theirs.shared);
    expect(theirs.result).toEqual([undefined, 2, 0]);
    expect(ours.result).toEqual(theirs.result);
  });

  it('without a fallback, the error fails the flow with the same message', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('failure');
    expect(theirs.result).toBe('no fallback here');
    expect(ours.result).toBe(theirs.result);
  });

  it('setParams and this._params: the flow’s params replace the node’s in the walk', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('params');
    expect(theirs.shared).toEqual({ greetings: ['Hello, node.', 'Hello, Ada!'] });
    expect(ours.shared).toEqual(theirs.shared);
    expect(theirs.result).toEqual([undefined, { name: 'node' }]);
    expect(ours.result).toEqual(theirs.result);
  });

  it('clone(): an independent copy of the node with its own params', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('clone');
    expect(theirs.result).toEqual([true, true, { name: 'original' }, { name: 'copy' }]);
    expect(ours.result).toEqual(theirs.result);
    expect(ours.shared).toEqual(theirs.shared);
  });

  it('BatchNode: results in item order', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('batchNode');
    expect((theirs.shared as { chunks: unknown }).chunks).toEqual([1, 2, 3]);
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it('ParallelBatchNode: results in item order although later items finish first', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('parallelBatchNode');
    expect((theirs.shared as { chunks: unknown }).chunks).toEqual([2, 4, 6, 8]);
    expect(ours.shared).toEqual(theirs.shared);
  });

  it('BatchFlow: one walk per param object, in order, then post(shared, list, undefined)', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('batchFlow');
    expect(theirs.shared).toMatchObject({
      log: ['x.md', 'y.md', 'z.md'],
      results: { 'x.md': 'summary of x.md', 'y.md': 'summary of y.md', 'z.md': 'summary of z.md' },
      postArgs: [[{ file: 'x.md' }, { file: 'y.md' }, { file: 'z.md' }], undefined],
    });
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it('ParallelBatchFlow: the same writes to shared', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('parallelBatchFlow');
    expect((theirs.shared as { log: string[] }).log).toEqual(['x.md', 'y.md', 'z.md']);
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it('nested BatchFlows merge params outward-in the same way', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('nestedBatchFlows');
    expect((theirs.shared as { log: string[] }).log.map((entry) => JSON.parse(entry) as unknown)).toEqual([
      { run: 1, level: 'inner', dir: 'a', page: 1 },
      { run: 1, level: 'outer', dir: 'a', page: 2 },
      { run: 1, level: 'inner', dir: 'b', page: 1 },
      { run: 1, level: 'flow', dir: 'b', page: 2 },
    ]);
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it("a Flow's own prep/post run around the walk; S7: post's execRes is the last action in queueflow", async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('flowPrepPost');
    expect(theirs.result).toBe('wrapped');
    expect(ours.result).toBe('wrapped');
    expect(theirs.shared).toEqual({ log: ['flow prep', 'a', 'b', 'flow post(prepRes, undefined)'] });
    expect(ours.shared).toEqual({ log: ['flow prep', 'a', 'b', 'flow post(prepRes, b-done)'] });
  });

  it('S7: a nested flow branches its parent on its last action in queueflow; the port always goes on "default"', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('nestedFlowDefaultPost');
    expect(theirs.shared).toEqual({ log: ['start', 'review', 'after: default'] });
    expect(ours.shared).toEqual({ log: ['start', 'review', 'after: approved'] });
    expect(theirs.result).toBeUndefined();
    expect(ours.result).toBeUndefined();
  });

  it('a nested flow whose post returns an action branches the parent the same way in both', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('nestedFlowExplicitPost');
    expect(theirs.shared).toEqual({ log: ['review', 'after: approved'] });
    expect(ours.shared).toEqual(theirs.shared);
    expect(ours.result).toEqual(theirs.result);
  });

  it('the same warnings with the same messages: overwrite, node.run with successors, flow ends', async () => {
    const { pocketflow: theirs, queueflow: ours } = await both('warnings');
    expect(theirs.warnings).toEqual([
      "Overwriting successor for action 'default'",
      "Node won't run successors. Use Flow.",
      "Flow ends: 'elsewhere' not found in [default]",
    ]);
    expect(ours.warnings).toEqual(theirs.warnings);
    // node.run ran only that node; the flow ran it once more and stopped.
    expect(theirs.shared).toEqual({ log: ['a', 'a'] });
    expect(ours.shared).toEqual(theirs.shared);
    // S7 again: the flow's last action.
    expect(theirs.result).toEqual(['elsewhere', undefined]);
    expect(ours.result).toEqual(['elsewhere', 'elsewhere']);
  });
});
