/**
 * Mailbox round trip: a ping-pong on RedisEngine vs a raw Redis LPUSH/BRPOP ping-pong between two
 * processes, on the same Redis. Printed per round trip, with the ratio, for two kinds of party:
 * - run to run: two runs that loop on a mailbox address (below);
 * - agent to agent: two keyed agents (README "Agents"). The asker's turn asks the answerer
 *   `exchanges` times in a loop (each `ask` parks the turn); each question is one turn of the
 *   answerer, which replies. A round trip is a turn of the answerer (activated by the question, its
 *   run made, its reply committed with the turn's end) and a wake of the asker's turn.
 *
 * - queueflow: two runs, `pinger` (each step `ask`s the ponger and waits for the answer) and
 *   `ponger` (each step receives a question and `reply`s), on TWO WORKER PROCESSES (this file
 *   with `--role worker`: `startWorker` at concurrency 8, as `queueflow worker` starts it). Any
 *   worker takes any step: both agents move between the two processes. This process only starts
 *   the runs and waits for their results.
 * - raw: this process `LPUSH ping` then `BRPOP pong`; a second process `BRPOP ping` then
 *   `LPUSH pong`. Four commands and two one-way hops per round trip: the floor for two processes
 *   talking through Redis.
 *
 * The worker processes count every Redis command they send (ioredis `sendCommand`, Lua scripts
 * by name), so the report also says what one round trip costs in Redis commands.
 *
 * Where the time goes (from the counts this benchmark prints). Each agent waits as a parked run.
 * A step that wakes a parked run takes it, reads it for its wake in the same script, and runs its
 * step next, in the same job, before its own run's next step (direct hand-off, `continueSteps`);
 * a run's next step runs on in the same job too. So once the exchange is going, both agents' steps
 * run one after the other in one worker slot, with no BullMQ job per step or per wake. One
 * run-to-run round trip is four steps and about 9 Redis commands (raw: 4):
 *   1. pinger, step k + 1 (after its commit of step k): `ask` → its question leaves with the park
 *      (no reserve: nothing can wait on its fresh reply address) → add its wake job (delayed: its
 *      deadline, and the safety net of a crash) → park-run (delivers the question).
 *   2. ponger, its next step (it was not parked: it was waiting in the chain behind the pinger):
 *      reserve-message (the question is there) → commit-step (consumes it, delivers the answer;
 *      takes the parked pinger and reads it with the answer reserved).
 *   3. pinger, taken: commit-step; its delayed wake job removed and its taken mark released (SREM),
 *      neither awaited.
 * An agent-to-agent round trip: the asker's park delivers the question and starts the answerer's
 * turn with its run, taken by the slot it frees; the answerer's one step commits its reply, its
 * turn's end and the asker's wake in one script; the asker's step commits. About 7.5 commands.
 * That is 4 to 5 sequential Redis round trips against 2 for the raw ping-pong, plus each step's
 * CPU (checkpoint JSON, the interpreter). Idle slots' BZPOPMIN wake-ups and the chain's hand-back
 * to BullMQ every 50 steps or second (a new job) make the rest.
 *
 * Usage: npm run bench -w @queueflow/worker   or   tsx bench/ping-pong.bench.ts [--exchanges 500 --rounds 3 --concurrency 8]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { defineAgent, defineFlow, Flow, Node, setWarningHandler, type Message } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '../src/index.js';
import { deleteKeys, redisUrl } from './bench-support.js';
import { countRedisCommands, perUnit, type CommandCounts as Counts } from './redis-command-counter.js';
import { recordFigure } from '../../../bench/record-figure.js';

const { values } = parseArgs({
  options: {
    role: { type: 'string', default: 'main' },
    prefix: { type: 'string' },
    key: { type: 'string' },
    exchanges: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
  },
});

// --- the two agents ----------------------------------------------------------------------------

interface PingShared {
  n: number;
  limit: number;
}
interface PingParams {
  address: string;
  [key: string]: unknown;
}

class Ping extends Node<PingShared, PingParams> {
  override prep(shared: PingShared): Promise<Message | undefined> {
    return this.ask(this.params.address, { n: shared.n });
  }
  override post(shared: PingShared, answer: Message): string {
    if ((answer.body as { n: number }).n !== shared.n)
      throw new Error(`answer ${JSON.stringify(answer.body)} to ping ${shared.n}`);
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : 'done';
  }
}

class Pong extends Node<PingShared, PingParams> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address);
  }
  override async post(shared: PingShared, question: Message): Promise<string> {
    await this.reply(question, question.body);
    shared.n += 1;
    return shared.n < shared.limit ? 'again' : 'done';
  }
}

function looping(node: Node<PingShared, PingParams>): Flow {
  node.on('again', node);
  node.on('done', new Node({ name: `${node.name}-done` }));
  return new Flow(node);
}

const pinger = defineFlow('bench-pinger', () => looping(new Ping({ name: 'ping' })));
const ponger = defineFlow('bench-ponger', () => looping(new Pong({ name: 'pong' })));

// --- the two keyed agents ------------------------------------------------------------------------

interface AskerState {
  n: number;
}
/** What the asker's turn is asked to do: `limit` round trips with `answerer`. */
interface Game {
  answerer: string;
  limit: number;
}

class AskLoop extends Node<AskerState> {
  override prep(state: AskerState): Promise<Message | undefined> {
    return this.ask((this.message!.body as unknown as Game).answerer, { n: state.n });
  }
  override post(state: AskerState, answer: Message | undefined): string {
    if ((answer?.body as { n: number } | undefined)?.n !== state.n)
      throw new Error(`answer ${JSON.stringify(answer?.body)} to question ${state.n}`);
    state.n += 1;
    return state.n < (this.message!.body as unknown as Game).limit ? 'again' : 'done';
  }
}

/** The asker's turn: counts from 0, asks until the game's limit, then answers whoever started it. */
const asker = defineAgent('bench-asker', {
  state: (): AskerState => ({ n: 0 }),
  turn: () => {
    const start = new (class extends Node<AskerState> {
      override prep(state: AskerState): void {
        state.n = 0;
      }
    })({ name: 'start' });
    const loop = new AskLoop({ name: 'ask' });
    const done = new (class extends Node<AskerState> {
      override async post(state: AskerState): Promise<void> {
        await this.reply(this.message!, { n: state.n });
      }
    })({ name: 'done' });
    start.next(loop);
    loop.on('again', loop);
    loop.on('done', done);
    return new Flow(start);
  },
});

/** The answerer: each question is a turn that replies with the question's body. */
const answerer = defineAgent('bench-answerer', {
  state: () => ({}),
  turn: () =>
    new (class extends Node {
      override async post(): Promise<void> {
        await this.reply(this.message!, this.message!.body);
      }
    })({ name: 'answer' }),
});

// --- worker process: a queueflow worker that counts the Redis commands it sends ------------------

async function workerRole(): Promise<void> {
  setWarningHandler(() => {});
  const counter = countRedisCommands();
  const worker = await startWorker({
    connection: redisUrl(),
    flows: [pinger, ponger],
    agents: [asker, answerer],
    prefix: values.prefix!,
    concurrency: Number(values.concurrency),
  });
  process.on('message', (message: { type: string }) => {
    if (message.type === 'reset') {
      counter.reset();
      process.send!({ type: 'reset' });
    }
    if (message.type === 'report') process.send!({ type: 'counts', counts: counter.counts });
    // Not awaited: a message listener; the process exits once the worker has closed.
    if (message.type === 'stop') void worker.close().then(() => process.exit(0));
  });
  process.send!({ type: 'ready' });
}

// --- raw process: BRPOP ping, LPUSH pong, until told to stop ------------------------------------

async function rawPongRole(): Promise<void> {
  const redis = new Redis(redisUrl());
  const key = values.key!;
  process.send!({ type: 'ready' });
  for (;;) {
    const [, value] = (await redis.brpop(`${key}:ping`, 0))!;
    if (value === 'stop') break;
    await redis.lpush(`${key}:pong`, value);
  }
  redis.disconnect();
  process.exit(0);
}

// --- main --------------------------------------------------------------------------------------

function spawnRole(role: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--role', role, ...args], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, NODE_NO_WARNINGS: '1' },
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`${role} process exited (${code}) before it was ready`)));
  });
}

function ask<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', resolve as (message: unknown) => void);
    child.send({ type });
  });
}

/** Milliseconds per round trip of one queueflow ping-pong of `exchanges` round trips. */
async function queueflowGame(engine: RedisEngine, exchanges: number): Promise<number> {
  const address = `pong.${nanoid(8)}`;
  const shared = { n: 0, limit: exchanges };
  const pong = await engine.start(ponger, { ...shared }, { params: { address } });
  const started = performance.now();
  const ping = await engine.start(pinger, { ...shared }, { params: { address } });
  const [a, b] = await Promise.all([ping.result(), pong.result()]);
  const ms = performance.now() - started;
  if (a.status !== 'completed' || b.status !== 'completed')
    throw new Error(`ping-pong failed: ${JSON.stringify(a.error ?? b.error)}`);
  return ms / exchanges;
}

/** Milliseconds per round trip of `exchanges` asks of one asker agent to one answerer agent. */
async function agentGame(engine: RedisEngine, exchanges: number): Promise<number> {
  const game: Game = { answerer: answerer.ref(nanoid(8)), limit: exchanges };
  const started = performance.now();
  const done = await engine.ask(asker.ref(nanoid(8)), { ...game }, { timeoutMs: 600_000 });
  const ms = performance.now() - started;
  if ((done?.body as { n: number } | undefined)?.n !== exchanges)
    throw new Error(`agent game ended with ${JSON.stringify(done?.body)}`);
  return ms / exchanges;
}

/** Milliseconds per round trip of a raw LPUSH/BRPOP ping-pong with the raw process. */
async function rawGame(redis: Redis, key: string, exchanges: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < exchanges; i++) {
    await redis.lpush(`${key}:ping`, String(i));
    const [, value] = (await redis.brpop(`${key}:pong`, 0))!;
    if (value !== String(i)) throw new Error(`raw pong ${value} to ping ${i}`);
  }
  return (performance.now() - started) / exchanges;
}

async function main(): Promise<void> {
  const exchanges = Number(values.exchanges);
  const rounds = Number(values.rounds);
  const prefix = `{bench-pp-${nanoid(6)}}`;
  const key = `{bench-raw-${nanoid(6)}}`;
  setWarningHandler(() => {});
  const workerArgs = ['--prefix', prefix, '--concurrency', values.concurrency!];

  const workers = await Promise.all([spawnRole('worker', workerArgs), spawnRole('worker', workerArgs)]);
  const engine = new RedisEngine({
    connection: redisUrl(),
    flows: [pinger, ponger],
    agents: [asker, answerer],
    prefix,
  });
  const rawPong = await spawnRole('raw-pong', ['--key', key]);
  const redis = new Redis(redisUrl());
  const ours: number[] = [];
  const agents: number[] = [];
  const raw: number[] = [];
  let counts: Counts = {};
  let agentCounts: Counts = {};
  /** Runs `game`, counting the commands both workers send meanwhile. */
  const counted = async (game: () => Promise<number>): Promise<{ ms: number; counts: Counts }> => {
    await Promise.all(workers.map((w) => ask(w, 'reset')));
    const ms = await game();
    const reports = await Promise.all(workers.map((w) => ask<{ counts: Counts }>(w, 'report')));
    const sum: Counts = {};
    for (const report of reports)
      for (const [name, n] of Object.entries(report.counts)) sum[name] = (sum[name] ?? 0) + n;
    return { ms, counts: sum };
  };
  try {
    // Warm-up: scripts loaded, code hot.
    await queueflowGame(engine, 50);
    await agentGame(engine, 50);
    await rawGame(redis, key, 200);
    for (let round = 0; round < rounds; round++) {
      raw.push(await rawGame(redis, key, exchanges));
      const runs = await counted(() => queueflowGame(engine, exchanges));
      ours.push(runs.ms);
      counts = runs.counts;
      const keyed = await counted(() => agentGame(engine, exchanges));
      agents.push(keyed.ms);
      agentCounts = keyed.counts;
    }
  } finally {
    await redis.lpush(`${key}:ping`, 'stop');
    redis.disconnect();
    await engine.close();
    await Promise.all(
      [...workers, rawPong].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            if (child !== rawPong) child.send({ type: 'stop' });
          }),
      ),
    );
    await deleteKeys(prefix);
    await deleteKeys(key);
  }

  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `mailbox ping-pong, ${exchanges} round trips, median of ${rounds} rounds, same Redis (${redisUrl().replace(/\/\/.*@/, '//***@')})`,
  );
  const line = (label: string, value: string): void => console.log(`  ${label.padEnd(53)}: ${value}`);
  line('raw LPUSH/BRPOP, 2 processes', `${median(raw).toFixed(3)} ms per round trip`);
  recordFigure({ name: 'ping-pong.raw', value: median(raw), unit: 'ms', better: 'lower' });
  /** Prints and records one party's round trip, its ratio to raw and its Redis commands. */
  const report = (party: 'run-to-run' | 'agent-to-agent', ms: number[], partyCounts: Counts, bars: string): void => {
    const label = party.replaceAll('-', ' ');
    const cost = perUnit(partyCounts, exchanges, 1);
    line(
      `queueflow RedisEngine, ${label}, 2 workers × ${values.concurrency} slots`,
      `${median(ms).toFixed(3)} ms per round trip`,
    );
    line(`ratio, ${label}`, `${(median(ms) / median(raw)).toFixed(1)} (queueflow / raw; ${bars})`);
    line(
      `Redis commands per round trip, both workers, ${label}`,
      `${cost.total.toFixed(1)} (raw: 4)${cost.pipelines > 0 ? `, in ${cost.pipelines.toFixed(1)} pipelines` : ''}`,
    );
    console.log(`    ${cost.byKind}`);
    recordFigure({
      name: `ping-pong.${party}.ratio`,
      value: median(ms) / median(raw),
      unit: '×',
      better: 'lower',
      bar: 3,
    });
    recordFigure({ name: `ping-pong.${party}.queueflow`, value: median(ms), unit: 'ms', better: 'lower' });
    recordFigure({
      name: `ping-pong.${party}.commands`,
      value: cost.total,
      unit: 'commands/round trip',
      better: 'lower',
    });
  };
  report('run-to-run', ours, counts, 'the bar is ≤ 3');
  report('agent-to-agent', agents, agentCounts, 'the bars are ≤ 4 for issue 25, ≤ 3 for issue 29');
}

if (values.role === 'worker') await workerRole();
else if (values.role === 'raw-pong') await rawPongRole();
else await main();
