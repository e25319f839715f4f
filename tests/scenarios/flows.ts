/**
 * The parity scenarios: one flow per rule of DESIGN.md (S1–S12) and the common shapes (nested
 * flows, batch flows, branching loops, retries then fallback). Every scenario must give the same
 * final `shared` and last action on `flow.run`, LocalEngine and RedisEngine (1 and 3 workers).
 *
 * Worker processes load this module, so it only exports FlowDefinitions and plain data.
 * Nodes are deterministic: a failure depends on the try index (`currentRetry`), never on
 * process-local state.
 */
import {
  AsyncBatchFlow,
  AsyncFlow,
  AsyncNode,
  AsyncParallelBatchNode,
  BatchFlow,
  BatchNode,
  defineFlow,
  Flow,
  Node,
  ParallelBatchFlow,
  ParallelBatchNode,
  type FlowDefinition,
  type JsonObject,
} from '@queueflow/runtime';

type Shared = Record<string, any>;

/** Appends `entry` to `shared.trace`. */
function trace(shared: Shared, entry: unknown): void {
  (shared.trace ??= []).push(entry);
}

// S1: prep → exec → post, post's return is the action.
class Lifecycle extends Node<Shared> {
  override prep(shared: Shared): number {
    trace(shared, 'prep');
    return shared.input as number;
  }
  override exec(input: number): number {
    return input * 2;
  }
  override post(shared: Shared, prepRes: number, execRes: number): string {
    trace(shared, `post ${prepRes}->${execRes}`);
    shared.output = execRes;
    return 'finished';
  }
}
export const lifecycle = defineFlow('s01-lifecycle', () => new Flow(new Lifecycle({ name: 'lifecycle' })));

// S2: exec tried up to maxRetries times; prep once; currentRetry is the try index.
class FlakyTwice extends Node<Shared> {
  constructor() {
    super({ maxRetries: 3, wait: 0.01, name: 'flaky' });
  }
  override prep(shared: Shared): string {
    trace(shared, 'prep');
    return 'job';
  }
  override exec(job: string): string {
    if (this.currentRetry < 2) throw new Error(`try ${this.currentRetry} failed`);
    return `${job} done on try ${this.currentRetry}`;
  }
  override post(shared: Shared, _p: string, result: string): void {
    shared.result = result;
  }
}
export const retries = defineFlow('s02-retries', () => new Flow(new FlakyTwice()));

// S3: after the last failed try, execFallback's value becomes execRes.
class AlwaysFails extends Node<Shared> {
  constructor() {
    super({ maxRetries: 2, wait: 0, name: 'always-fails' });
  }
  override exec(): never {
    throw new Error(`boom on try ${this.currentRetry}`);
  }
  override execFallback(_prepRes: unknown, error: Error): string {
    return `fallback after: ${error.message}`;
  }
  override post(shared: Shared, _p: unknown, execRes: string): string {
    shared.result = execRes;
    return 'recovered';
  }
}
export const fallback = defineFlow('s03-fallback', () => new Flow(new AlwaysFails()));

// S4, S5: named successors; an action with no successor ends the flow.
class Router extends Node<Shared> {
  override post(shared: Shared): string {
    trace(shared, `route ${shared.route}`);
    return shared.route as string;
  }
}
class Mark extends Node<Shared> {
  override post(shared: Shared): string {
    trace(shared, `mark ${this.name}`);
    return 'marked';
  }
}
export const branching = defineFlow('s04-branching', () => {
  const router = new Router({ name: 'router' });
  router.on('left', new Mark({ name: 'left' })).on('right', new Mark({ name: 'right' }));
  return new Flow(router);
});

// S6: params from the run reach every visited copy, nested flows included; per-visit fields
// do not leak between visits.
class ParamReader extends Node<Shared> {
  visits = 0;
  override prep(shared: Shared): void {
    this.visits += 1; // a per-visit copy: always 1
    trace(shared, `${this.name} sees ${JSON.stringify(this.params)} visit ${this.visits}`);
  }
  override post(shared: Shared): string | undefined {
    shared.laps = (shared.laps ?? 0) + 1;
    return shared.laps < 3 ? 'again' : undefined;
  }
}
export const params = defineFlow('s06-params', () => {
  const outer = new ParamReader({ name: 'outer' });
  const inner = new Flow(new ParamReader({ name: 'inner' }), { name: 'inner-flow' });
  outer.on('again', outer);
  outer.next(inner);
  return new Flow(outer);
});

// S7: a nested flow's default post returns its last action and branches the parent.
class Decide extends Node<Shared> {
  override post(shared: Shared): string {
    return shared.approve ? 'approved' : 'rejected';
  }
}
class Audit extends Flow<Shared> {
  override prep(shared: Shared): string {
    trace(shared, 'audit prep');
    return 'audit';
  }
  override post(shared: Shared, prepRes: string, lastAction: string): string {
    trace(shared, `${prepRes} post ${lastAction}`);
    return lastAction;
  }
}
export const nested = defineFlow('s07-nested', () => {
  const audit = new Audit(new Decide({ name: 'decide' }), { name: 'audit' });
  audit.on('approved', new Mark({ name: 'publish' })).on('rejected', new Mark({ name: 'revise' }));
  return new Flow(audit);
});

// S8: BatchNode, per-item tries, item order, empty batch.
class Squares extends BatchNode<Shared> {
  constructor() {
    super({ maxRetries: 2, name: 'squares' });
  }
  override prep(shared: Shared): number[] | null {
    return shared.numbers as number[] | null;
  }
  override exec(n: number): number {
    if (n % 3 === 0 && this.currentRetry === 0) throw new Error(`item ${n} fails its first try`);
    return n * n;
  }
  override post(shared: Shared, _items: unknown, squares: number[]): void {
    shared.squares = squares;
  }
}
export const batchNode = defineFlow('s08-batch-node', () => new Flow(new Squares()));

// S9: BatchFlow param merging, nested batch flows (outer flow params, outer item, inner item).
class Cell extends Node<Shared> {
  override post(shared: Shared): void {
    const { row, col, table } = this.params as { row: number; col: number; table: string };
    trace(shared, `${table}[${row},${col}]`);
  }
}
class Rows extends BatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.rows as number[]).map((row) => ({ row }));
  }
}
class Cols extends BatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] | undefined {
    return shared.cols === null ? undefined : (shared.cols as number[]).map((col) => ({ col }));
  }
}
export const batchFlow = defineFlow('s09-batch-flow', () => {
  const rows = new Rows(new Cols(new Cell({ name: 'cell' }), { name: 'cols' }), { name: 'rows' });
  rows.next(new Mark({ name: 'after-rows' }));
  return new Flow(rows);
});

// S10: ParallelBatchNode and ParallelBatchFlow; each child writes its own key.
class Fetch extends ParallelBatchNode<Shared> {
  constructor() {
    super({ maxRetries: 2, concurrency: 2, name: 'fetch' });
  }
  override prep(shared: Shared): string[] {
    return shared.urls as string[];
  }
  override async exec(url: string): Promise<string> {
    if (url.endsWith('flaky') && this.currentRetry === 0) throw new Error('first try of a flaky item fails');
    await new Promise((resolve) => setTimeout(resolve, 2));
    return `<${url} try ${this.currentRetry}>`;
  }
  override post(shared: Shared, _urls: unknown, pages: string[]): void {
    shared.pages = pages;
  }
}
class WriteResult extends Node<Shared> {
  override async exec(): Promise<number> {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return (this.params.key as string).length;
  }
  override post(shared: Shared, _p: unknown, length: number): void {
    (shared.results ??= {})[this.params.key as string] = { length, lang: this.params.lang };
  }
}
class PerKey extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.keys as string[]).map((key) => ({ key }));
  }
}
export const parallel = defineFlow('s10-parallel', () => {
  const fetch = new Fetch();
  fetch.next(new PerKey(new WriteResult({ name: 'write-result' }), { name: 'per-key', concurrency: 3 }));
  return new Flow(fetch);
});

// S11: a bare node as the root runs alone, its successors are not run.
export const bareNode = defineFlow('s11-bare-node', () => {
  const lonely = new Mark({ name: 'lonely' });
  lonely.next(new Mark({ name: 'never' }));
  return lonely;
});

// S12: Async classes, lifecycle methods returning plain values or Promises.
class AsyncStep extends AsyncNode<Shared> {
  override async prep(shared: Shared): Promise<number> {
    return shared.start as number;
  }
  override exec(start: number): number {
    return start + 1;
  }
  override async post(shared: Shared, _p: number, next: number): Promise<string> {
    trace(shared, `async ${next}`);
    return 'default';
  }
}
class AsyncDoubles extends AsyncParallelBatchNode<Shared> {
  override prep(): number[] {
    return [1, 2, 3];
  }
  override async exec(n: number): Promise<number> {
    return n * 2;
  }
  override post(shared: Shared, _p: unknown, doubles: number[]): void {
    shared.doubles = doubles;
  }
}
class AsyncBatch extends AsyncBatchFlow<Shared> {
  override async prep(): Promise<JsonObject[]> {
    return [{ tag: 'x' }, { tag: 'y' }];
  }
}
class Tag extends AsyncNode<Shared> {
  override post(shared: Shared): void {
    trace(shared, `tag ${String(this.params.tag)}`);
  }
}
export const asyncClasses = defineFlow('s12-async', () => {
  const first = new AsyncStep({ name: 'async-step' });
  first
    .next(new AsyncDoubles({ name: 'async-doubles' }))
    .next(new AsyncBatch(new Tag({ name: 'tag' }), { name: 'async-batch' }));
  return new AsyncFlow(first);
});

// A branching loop: count to a limit, then branch on parity.
class Counter extends Node<Shared> {
  override post(shared: Shared): string {
    shared.count = (shared.count ?? 0) + 1;
    if (shared.count < shared.limit) return 'loop';
    return shared.count % 2 === 0 ? 'even' : 'odd';
  }
}
export const loop = defineFlow('loop', () => {
  const counter = new Counter({ name: 'counter' });
  counter
    .on('loop', counter)
    .on('even', new Mark({ name: 'even' }))
    .on('odd', new Mark({ name: 'odd' }));
  return new Flow(counter);
});

// Nesting of fan-outs (issue 4): a ParallelBatchFlow whose children contain ParallelBatchNodes,
// a BatchFlow inside a ParallelBatchFlow, a ParallelBatchFlow inside a BatchFlow, and a
// ParallelBatchFlow inside a ParallelBatchFlow. Children write disjoint paths (so `flow.run`,
// where they share one object, gives the same `shared`), and nodes record the params they see:
// outer flow params, then outer item, then inner item (rule S9).

/** A plain copy of a node's params, keys sorted (what the node saw). */
function seen(params: object): JsonObject {
  return Object.fromEntries(Object.entries(params).sort(([a], [b]) => a.localeCompare(b))) as JsonObject;
}

class Docs extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return Object.keys(shared.corpus as object).map((doc) => ({ doc, level: 'doc' }));
  }
}
/** Per doc: its chunks as ParallelBatchNode items; a chunk with '!' fails its first try. */
class Chunks extends ParallelBatchNode<Shared> {
  constructor() {
    super({ name: 'chunks', maxRetries: 2, concurrency: 2 });
  }
  override prep(shared: Shared): string[] {
    return shared.corpus[this.params.doc as string] as string[];
  }
  override async exec(chunk: string): Promise<string> {
    if (chunk.includes('!') && this.currentRetry === 0) throw new Error(`chunk ${chunk} fails its first try`);
    await new Promise((resolve) => setTimeout(resolve, 1));
    return `${chunk.toUpperCase()} (try ${this.currentRetry}, ${this.params.lang as string}/${this.params.doc as string})`;
  }
  override post(shared: Shared, chunks: string[], results: string[]): string {
    (shared.chunks ??= {})[this.params.doc as string] = { results, params: seen(this.params), count: chunks.length };
    return 'chunked';
  }
}
class Total extends Node<Shared> {
  override post(shared: Shared): string {
    shared.total = Object.values((shared.chunks ?? {}) as Record<string, { count: number }>).reduce(
      (sum, d) => sum + d.count,
      0,
    );
    return 'summed';
  }
}
export const nestedParallelNode = defineFlow('n1-parallel-flow-of-parallel-nodes', () => {
  const docs = new Docs(new Chunks(), { name: 'docs' });
  docs.next(new Total({ name: 'total' }));
  return new Flow(docs);
});

class Regions extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return Object.keys(shared.cities as object).map((region) => ({ region, level: 'outer', tag: `t-${region}` }));
  }
}
class Cities extends BatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] | null {
    const cities = shared.cities[this.params.region as string] as string[] | null;
    return cities && cities.map((city) => ({ city, level: 'inner' }));
  }
  override post(shared: Shared, list: JsonObject[]): string {
    (shared.batches ??= {})[this.params.region as string] = list.length;
    return 'visited';
  }
}
class Visit extends Node<Shared> {
  override post(shared: Shared): string {
    const { region, city } = this.params as { region: string; city: string };
    ((shared.visits ??= {})[region] ??= {})[city] = seen(this.params);
    return `at-${city}`;
  }
}
export const batchInParallel = defineFlow('n2-batch-flow-in-parallel-flow', () => {
  const regions = new Regions(new Cities(new Visit({ name: 'visit' }), { name: 'cities' }), {
    name: 'regions',
    concurrency: 2,
  });
  regions.next(new Mark({ name: 'after-regions' }));
  return new Flow(regions);
});

class Batches extends BatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.batches as number[]).map((batch) => ({ batch, level: 'outer' }));
  }
}
class Parts extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.parts as string[]).map((part) => ({ part, level: 'inner' }));
  }
  override post(shared: Shared): string {
    (shared.fanIns ??= []).push(this.params.batch); // once per batch, in batch order
    return 'parts-done';
  }
}
class Cell2 extends Node<Shared> {
  override post(shared: Shared): void {
    (shared.cells ??= {})[`${this.params.batch as number}-${this.params.part as string}`] = seen(this.params);
  }
}
export const parallelInBatch = defineFlow('n3-parallel-flow-in-batch-flow', () => {
  const batches = new Batches(new Parts(new Cell2({ name: 'cell' }), { name: 'parts' }), { name: 'batches' });
  batches.next(new Mark({ name: 'after-batches' }));
  return new Flow(batches);
});

class Teams extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return Object.keys(shared.teams as object).map((team) => ({ team }));
  }
}
class Members extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.teams[this.params.team as string] as string[]).map((member) => ({ member }));
  }
  override post(shared: Shared): string {
    (shared.teamsDone ??= {})[this.params.team as string] = true;
    return 'team-done';
  }
}
class Enrol extends Node<Shared> {
  override post(shared: Shared): string {
    const { team, member } = this.params as { team: string; member: string };
    ((shared.roster ??= {})[team] ??= {})[member] = seen(this.params);
    return 'enrolled';
  }
}
export const parallelInParallel = defineFlow('n4-parallel-flow-in-parallel-flow', () => {
  const teams = new Teams(new Members(new Enrol({ name: 'enrol' }), { name: 'members', concurrency: 2 }), {
    name: 'teams',
  });
  return new Flow(teams);
});

class Rounds extends BatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.rounds as number[]).map((round) => ({ round }));
  }
}
class Shards extends ParallelBatchFlow<Shared> {
  override prep(shared: Shared): JsonObject[] {
    return (shared.shards as string[]).map((shard) => ({ shard }));
  }
}
/** One ParallelBatchNode fan-out per shard and round; its items carry round and shard. */
class Pieces extends ParallelBatchNode<Shared> {
  constructor() {
    super({ name: 'pieces', maxRetries: 2 });
  }
  override prep(): string[] {
    return ['p', 'q'].map((piece) => `${this.params.round as number}.${this.params.shard as string}.${piece}`);
  }
  override exec(piece: string): string {
    if (piece.endsWith('.q') && this.currentRetry === 0) throw new Error(`piece ${piece} fails its first try`);
    return `${piece}@${this.currentRetry}`;
  }
  override post(shared: Shared, _pieces: unknown, results: string[]): void {
    (shared.pieces ??= {})[`${this.params.round as number}.${this.params.shard as string}`] = results;
  }
}
export const deepNesting = defineFlow('n5-batch-of-parallel-flows-of-parallel-nodes', () => {
  const rounds = new Rounds(new Shards(new Pieces(), { name: 'shards', concurrency: 2 }), { name: 'rounds' });
  rounds.next(new Mark({ name: 'after-rounds' }));
  return new Flow(rounds);
});

/** One parity case: a flow, its initial shared store and params. */
export interface Scenario {
  name: string;
  flow: FlowDefinition;
  shared: JsonObject;
  params?: JsonObject;
}

export const scenarios: Scenario[] = [
  { name: 'S1 prep → exec → post', flow: lifecycle, shared: { input: 21 } },
  { name: 'S2 retries (prep once, currentRetry)', flow: retries, shared: {} },
  { name: 'S3 fallback after the last try', flow: fallback, shared: {} },
  { name: 'S4/S5 branch left', flow: branching, shared: { route: 'left' } },
  { name: 'S4/S5 branch right', flow: branching, shared: { route: 'right' } },
  { name: 'S5 unknown action ends the flow', flow: branching, shared: { route: 'nowhere' } },
  {
    name: 'S6 params reach nested flows; no leaks between visits',
    flow: params,
    shared: {},
    params: { user: 'ada', lang: 'en' },
  },
  { name: 'S7 nested flow branches its parent (approved)', flow: nested, shared: { approve: true } },
  { name: 'S7 nested flow branches its parent (rejected)', flow: nested, shared: { approve: false } },
  { name: 'S8 batch node, per-item tries', flow: batchNode, shared: { numbers: [1, 2, 3, 4, 5, 6] } },
  { name: 'S8 batch node, empty batch', flow: batchNode, shared: { numbers: null } },
  {
    name: 'S9 nested batch flows merge params',
    flow: batchFlow,
    shared: { rows: [1, 2], cols: [7, 8, 9] },
    params: { table: 't' },
  },
  { name: 'S9 empty inner list', flow: batchFlow, shared: { rows: [1], cols: null }, params: { table: 'u' } },
  {
    name: 'S10 parallel node and flow',
    flow: parallel,
    shared: { urls: ['a', 'b-flaky', 'c', 'd'], keys: ['one', 'three', 'five', 'seven', 'eleven'] },
    params: { lang: 'fr' },
  },
  { name: 'S11 bare node runs alone', flow: bareNode, shared: {} },
  { name: 'S12 async classes', flow: asyncClasses, shared: { start: 41 } },
  { name: 'branching loop (even)', flow: loop, shared: { limit: 20 } },
  { name: 'branching loop (odd)', flow: loop, shared: { limit: 7 } },
  {
    name: 'nesting: ParallelBatchFlow whose children contain ParallelBatchNodes',
    flow: nestedParallelNode,
    shared: { corpus: { intro: ['a', 'b!', 'c'], body: ['d', 'e', 'f!', 'g'], empty: [] } },
    params: { lang: 'fr', level: 'run' },
  },
  {
    name: 'nesting: a ParallelBatchFlow with no param sets goes straight to post',
    flow: nestedParallelNode,
    shared: { corpus: {} },
    params: { lang: 'fr' },
  },
  {
    name: 'nesting: BatchFlow inside a ParallelBatchFlow (params: run, outer item, inner item)',
    flow: batchInParallel,
    shared: { cities: { eu: ['paris', 'rome'], us: ['austin', 'boston', 'denver'], none: null } },
    params: { lang: 'de', level: 'run', tag: 'run-tag' },
  },
  {
    name: 'nesting: ParallelBatchFlow inside a BatchFlow (one fan-out per batch)',
    flow: parallelInBatch,
    shared: { batches: [1, 2, 3], parts: ['x', 'y', 'z'] },
    params: { lang: 'en', level: 'run' },
  },
  {
    name: 'nesting: BatchFlow of ParallelBatchFlows of ParallelBatchNodes (a fan-out per round and shard)',
    flow: deepNesting,
    shared: { rounds: [1, 2], shards: ['s1', 's2', 's3'] },
  },
  {
    name: 'nesting: ParallelBatchFlow inside a ParallelBatchFlow',
    flow: parallelInParallel,
    shared: { teams: { red: ['ann', 'bob'], blue: ['cy', 'di', 'ed'] } },
    params: { season: 'spring' },
  },
];
