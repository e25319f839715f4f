/**
 * The Taboo example distributed: the offline game on RedisEngine with two `queueflow worker`
 * processes loading the build of `src/taboo/taboo-flows.ts` (the two agent types) gives the
 * transcript of the embedded game. Also the game's CLI with `--redis`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisEngine } from '@queueflow/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  formatTranscript,
  parseExecTrace,
  playTaboo,
  tabooGuesser,
  tabooHinter,
  type TabooGame,
} from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../../../tests/support/worker-process.js';
import { EXPECTED_GAME } from './taboo-expected.js';

const EXAMPLES = fileURLToPath(new URL('..', import.meta.url));
const FLOWS = path.join(EXAMPLES, 'dist/taboo/taboo-flows.js');
const CLI = path.join(EXAMPLES, 'dist/cli/taboo.js');

describe('Taboo on RedisEngine with the agents on two worker processes', () => {
  const url = redisUrl();
  const prefix = testPrefix('taboo');
  const markerDir = mkdtempSync(path.join(tmpdir(), 'queueflow-taboo-'));
  let workers: WorkerProcess[] = [];
  let engine: RedisEngine;
  let embedded: TabooGame;
  let distributed: TabooGame;

  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never a model in tests (the workers inherit this env)
    workers = await Promise.all([1, 2].map(() => spawnWorker({ flows: FLOWS, redisUrl: url, prefix, concurrency: 2 })));
    engine = new RedisEngine({ connection: url, flows: [], agents: [tabooHinter, tabooGuesser], prefix });
    embedded = await playTaboo();
    distributed = await playTaboo({ engine, turnTimeoutMs: 30_000, hinter: { markerDir }, guesser: { markerDir } });
  }, 120_000);

  afterAll(async () => {
    await engine?.close();
    await stopWorkers(workers);
    await deletePrefix(url, prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  it('gives the same transcript and guesser log as the embedded game', () => {
    expect(formatTranscript(distributed.transcript)).toBe(EXPECTED_GAME);
    expect(distributed.transcript).toEqual(embedded.transcript);
    expect(distributed.guesserLog).toEqual(embedded.guesserLog);
  });

  // Which worker takes which turn is up to BullMQ (any worker may take any step: workers are
  // stateless); in practice both agents hop between the two processes. The fault test makes the
  // move from one process to the other certain.
  it('runs every turn on the worker processes, each message consumed once', () => {
    const pids = new Set(workers.map((w) => w.pid));
    const hinterSteps = parseExecTrace(readFileSync(path.join(markerDir, 'hinter.log'), 'utf8'));
    const guesserSteps = parseExecTrace(readFileSync(path.join(markerDir, 'guesser.log'), 'utf8'));
    expect(hinterSteps).toHaveLength(11); // the opening hint and one turn per guess
    expect(guesserSteps).toHaveLength(10); // one per hint (the join and the end take no exec)
    for (const step of [...hinterSteps, ...guesserSteps]) expect(pids.has(step.pid), `pid ${step.pid}`).toBe(true);
    expect(new Set(distributed.hinter.received).size).toBe(10);
    expect(new Set(distributed.guesser.received).size).toBe(11);
  });

  it('leaves both agents idle, every turn completed: one per message', async () => {
    for (const [ref, turns] of [
      [distributed.hinter.ref, 11], // the start and 10 guesses
      [distributed.guesser.ref, 12], // its join, 10 hints and the end
    ] as const) {
      const info = await engine.agent(ref);
      expect(info).toMatchObject({ turns, inbox: 0, failed: [], reminders: [] });
      expect(info?.running).toBeUndefined();
      const history = await engine.agentHistory(ref);
      expect(history.map((turn) => turn.status)).toEqual(Array(turns).fill('completed'));
    }
  });

  it('plays from the CLI with --redis: the same game on the same workers', async () => {
    const args = [CLI, '--redis', url, '--prefix', prefix, '--words', 'volcano,lighthouse', '--offline'];
    const child = spawn(process.execPath, args, {
      cwd: EXAMPLES,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(
      /Taboo: 2 cards, 3 hints each, rule-based players, on queueflow workers \(redis:\/\/.+, prefix /,
    );
    expect(stderr).toMatch(/Agents agent:taboo-hinter\/\S+ and agent:taboo-guesser\/\S+; waiting for workers/);
    // The conversation live, from the streams of the agents' turns on the workers.
    expect(stderr).toMatch(/^ {2}hinter {2}1\.1: .+\n {2}guesser 1\.1: .+$/m);
    expect(stderr).toMatch(/the hinter ends the game/);
    const expected = await playTaboo({ words: ['volcano', 'lighthouse'] });
    expect(stdout.trim()).toBe(formatTranscript(expected.transcript));
  }, 120_000);
});
