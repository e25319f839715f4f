/**
 * Fault (issue 5): SIGKILL the worker running the hinter's turn on the guesser's message, before
 * the turn committed. The hinter's `exec` is slowed down (`execMs`) and writes which process
 * holds which message (`markerDir`), so the test kills exactly that process at that moment. The
 * turn's step runs again on the other worker with the same message (same id), and the game
 * finishes with the transcript of the game without a crash.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisEngine } from '@queueflow/worker';
import { afterAll, describe, expect, it } from 'vitest';
import {
  formatTranscript,
  parseExecTrace,
  playTaboo,
  tabooGuesser,
  tabooHinter,
  type ExecTraceLine,
} from '../src/index.js';
import { deletePrefix, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { waitFor } from '../../../tests/support/wait-for.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../../../tests/support/worker-process.js';
import { EXPECTED_GAME } from './taboo-expected.js';

const FLOWS = fileURLToPath(new URL('../dist/taboo/taboo-flows.js', import.meta.url));

describe('fault: SIGKILL the worker running the hinter while it holds a received guess', () => {
  const url = redisUrl();
  const prefix = testPrefix('taboo-fault');
  const markerDir = mkdtempSync(path.join(tmpdir(), 'queueflow-taboo-fault-'));
  const engine = new RedisEngine({ connection: url, flows: [], agents: [tabooHinter, tabooGuesser], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    await stopWorkers(workers);
    await deletePrefix(url, prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  const hinterTrace = (): ExecTraceLine[] => {
    try {
      return parseExecTrace(readFileSync(path.join(markerDir, 'hinter.log'), 'utf8'));
    } catch {
      return []; // not written yet
    }
  };

  it('redelivers the guess (same id) to the other worker and finishes with the same transcript', async () => {
    delete process.env.OPENAI_BASE_URL; // never a model in tests (the workers inherit this env)
    // A short lock, so the killed worker's step is taken over within seconds.
    const options = {
      flows: FLOWS,
      redisUrl: url,
      prefix,
      concurrency: 2,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
    };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const playing = playTaboo({ engine, turnTimeoutMs: 30_000, hinter: { execMs: 600, markerDir } });

    // The hinter's exec for the 4th guess it received: that turn has the message, uncommitted.
    const held = await waitFor(
      'the hinter to hold its 4th guess',
      () => hinterTrace().filter((line) => line.messageId)[3],
    );
    const victim = workers.find((w) => w.pid === held.pid);
    expect(victim, `the worker running the hinter (pid ${held.pid})`).toBeDefined();
    victim!.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');

    const game = await playing;
    expect(formatTranscript(game.transcript)).toBe(EXPECTED_GAME);
    const embedded = await playTaboo();
    expect(game.transcript).toEqual(embedded.transcript);
    expect(game.guesserLog).toEqual(embedded.guesserLog);

    // The guess came again, same id, in the other process; the hinter's state took it once.
    const deliveries = hinterTrace().filter((line) => line.messageId === held.messageId);
    expect(deliveries.map((line) => line.pid)).toEqual([held.pid, workers.find((w) => w !== victim)!.pid]);
    expect(game.hinter.received.filter((id) => id === held.messageId)).toHaveLength(1);
    expect(new Set(game.hinter.received).size).toBe(10);
    // The hint the turn run again sent left once: the guesser got every message once.
    expect(new Set(game.guesser.received).size).toBe(11);
    expect(game.guesser.received).toHaveLength(11);
  }, 120_000);
});
