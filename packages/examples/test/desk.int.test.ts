/**
 * The mail desk (issue 28): the same 100 corpus mails replayed into the desk's agents embedded
 * (LocalEngine) and on two worker processes, one of them SIGKILLed while the mails are triaged
 * (a third takes its place). Every thread, sender and list agent ends in the same state, and no
 * mail is lost or counted twice: each sender's counts add up to the mails triaged. And on a worker
 * of the suite's 3-master Redis Cluster: the same states as embedded, and the messages between
 * partitions counted. 100 mails give 69 threads (some of 3 or more people) and 10 lists: what the
 * claims need; more only cost time (each mail is a few turns on Redis).
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import {
  deskAgents,
  deskSample,
  readCorpusMails,
  runDesk,
  scriptedReviewer,
  type DeskMail,
  type DeskResult,
} from '../src/index.js';
import { deletePrefix, redisClusterUrls, redisUrl, testPrefix } from '../../../tests/support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../../../tests/support/worker-process.js';

const FLOWS = fileURLToPath(new URL('../dist/flows.js', import.meta.url));
const MAILS = 100;

/** What must not depend on where and in which order the turns ran (a list's digests do). */
function comparable(result: DeskResult): object {
  return {
    threads: result.threads,
    senders: result.senders,
    lists: result.lists.map(({ key, state }) => ({ key, count: state.count, senders: state.senders })),
  };
}

describe('the mail desk', () => {
  let mails: DeskMail[] = [];
  let embedded: DeskResult;
  const prefix = testPrefix('desk');
  const clusterPrefix = testPrefix('desk-cluster');
  const workers: WorkerProcess[] = [];
  const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 };
  const cluster = redisClusterUrls();
  /** The worker the SIGKILL case kills (one of its two). */
  let victim: WorkerProcess;

  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never a model in tests (the workers inherit this env)
    // Every worker starts (seconds of imports) while the corpus is read.
    const spawned = (worker: Parameters<typeof spawnWorker>[0]): Promise<WorkerProcess> =>
      spawnWorker(worker).then((started) => (workers.push(started), started));
    const started = Promise.all([
      spawned(options),
      spawned(options),
      spawned({ flows: FLOWS, redisUrl: redisUrl(), cluster, prefix: clusterPrefix, concurrency: 8 }),
    ]);
    mails = deskSample(await readCorpusMails(), MAILS);
    [victim] = await started;
  }, 120_000);
  afterAll(async () => {
    await stopWorkers(workers);
    await deletePrefix(redisUrl(), prefix);
    await deletePrefix({ cluster: redisClusterUrls() }, clusterPrefix);
  });

  it('embedded: every mail reaches its thread, sender and list once', async () => {
    const engine = new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
    try {
      embedded = await runDesk(engine, mails, { inFlight: 16, turnBudget: 8 });
    } finally {
      await engine.close();
    }
    const triaged = embedded.ham + embedded.spam;
    expect(triaged + embedded.skipped.length).toBe(MAILS);
    expect(triaged).toBeGreaterThan(MAILS * 0.9);
    expect(embedded.senders.reduce((sum, { state }) => sum + state.ham + state.spam, 0)).toBe(triaged);
    expect(embedded.threads.reduce((sum, { state }) => sum + state.count, 0)).toBe(triaged);
    expect(embedded.lists.length).toBeGreaterThan(3);
    expect(embedded.turns['desk-triage']).toBe(MAILS);
    // Threads group replies: fewer threads than mails, some with several people.
    expect(embedded.threads.length).toBeLessThan(triaged);
    expect(embedded.threads.some(({ state }) => state.participants.length >= 3)).toBe(true);
  });

  it('with a person reviewing (--studio), starts no scripted reviewer and ends as embedded does', async () => {
    const engine = new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
    try {
      const reviewed = await runDesk(engine, mails, { inFlight: 16, turnBudget: 8, reviewer: 'person' });
      expect(comparable(reviewed)).toEqual(comparable(embedded));
      expect(await engine.list({ flow: scriptedReviewer.name })).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('on workers, one SIGKILLed midway: the same states, no mail lost or counted twice', async () => {
    const engine = new RedisEngine({ connection: redisUrl(), prefix, flows: [scriptedReviewer], agents: deskAgents });
    let killed = false;
    try {
      const distributed = await runDesk(engine, mails, {
        inFlight: 16,
        turnBudget: 8,
        onProgress: (triaged) => {
          if (killed || triaged < MAILS / 3) return;
          killed = true;
          victim.kill('SIGKILL');
          void spawnWorker(options).then((worker) => workers.push(worker));
        },
      });
      expect(killed).toBe(true);
      expect(comparable(distributed)).toEqual(comparable(embedded));
      expect(distributed.skipped).toEqual(embedded.skipped);
      // Its agents would be counted again: a second desk on the prefix is refused.
      await expect(runDesk(engine, mails, { inFlight: 16, turnBudget: 8 })).rejects.toThrow(
        'this engine already holds agents of an earlier desk run',
      );
    } finally {
      await engine.close();
    }
  }, 240_000);

  it('on a worker of a Redis Cluster: the same states, and the messages between partitions counted', async () => {
    const engine = new RedisEngine({
      connection: { cluster },
      prefix: clusterPrefix,
      flows: [scriptedReviewer],
      agents: deskAgents,
    });
    try {
      const partitions = await engine.deploymentPartitions();
      const distributed = await runDesk(engine, mails, { inFlight: 16, turnBudget: 8, partitions });
      expect(comparable(distributed)).toEqual(comparable(embedded));
      const triaged = distributed.ham + distributed.spam;
      expect(distributed.crossPartition).toMatchObject({ partitions: 16 });
      // Each triaged mail went to its thread and sender at least; most between partitions.
      expect(distributed.crossPartition!.messages).toBeGreaterThanOrEqual(2 * triaged);
      expect(distributed.crossPartition!.crossing).toBeGreaterThan(distributed.crossPartition!.messages / 2);
      expect(embedded.crossPartition).toBeUndefined();
    } finally {
      await engine.close();
    }
  }, 180_000);
});
