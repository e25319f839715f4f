import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { scenarios, type Scenario } from '../scenarios/flows.js';
import type { RedisWhere } from '../support/redis-prefix.js';
import { deletePrefix, redisClusterUrls, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

/**
 * DESIGN "Parity": every scenario on `flow.run`, LocalEngine and RedisEngine with 1 and 3 worker
 * processes, and with 2 on a 3-master Redis Cluster (workers started with `--cluster`), gives the
 * same final `shared` and the same last action.
 */
const FLOWS = fileURLToPath(new URL('../scenarios/flows.ts', import.meta.url));
const flows = [...new Set(scenarios.map((s) => s.flow))];

interface Outcome {
  shared: JsonObject;
  lastAction: string | undefined;
}

async function viaFlowRun(scenario: Scenario): Promise<Outcome> {
  const root = scenario.flow.build();
  if (scenario.params) root.setParams(structuredClone(scenario.params));
  const shared = structuredClone(scenario.shared);
  const lastAction = await root.run(shared);
  return { shared: JSON.parse(JSON.stringify(shared)) as JsonObject, lastAction };
}

describe('parity: flow.run = LocalEngine = RedisEngine (1 and 3 worker processes, 2 on a cluster)', () => {
  const local = new LocalEngine({ flows });
  const clusters: {
    name: string;
    prefix: string;
    size: number;
    onCluster?: boolean;
    workers: WorkerProcess[];
    engine?: RedisEngine;
  }[] = [
    { name: '1 worker', prefix: testPrefix('parity1'), size: 1, workers: [] },
    { name: '3 workers', prefix: testPrefix('parity3'), size: 3, workers: [] },
    { name: '2 workers on a Redis Cluster', prefix: testPrefix('parityc'), size: 2, onCluster: true, workers: [] },
  ];
  const where = (cluster: (typeof clusters)[number]): RedisWhere =>
    cluster.onCluster ? { cluster: redisClusterUrls() } : redisUrl();

  beforeAll(async () => {
    setWarningHandler(() => {});
    await Promise.all(
      clusters.map(async (cluster) => {
        const start = (): Promise<WorkerProcess> =>
          spawnWorker({
            flows: FLOWS,
            redisUrl: redisUrl(),
            ...(cluster.onCluster ? { cluster: redisClusterUrls() } : {}),
            prefix: cluster.prefix,
            concurrency: 4,
          });
        cluster.workers = await Promise.all(Array.from({ length: cluster.size }, start));
      }),
    );
    for (const cluster of clusters)
      cluster.engine = new RedisEngine({ connection: where(cluster), flows, prefix: cluster.prefix });
  }, 120_000);

  afterAll(async () => {
    setWarningHandler(null);
    await local.close();
    for (const cluster of clusters) {
      await cluster.engine?.close();
      await stopWorkers(cluster.workers);
      await deletePrefix(where(cluster), cluster.prefix);
    }
  });

  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      const expected = await viaFlowRun(scenario);
      const options = scenario.params ? { params: scenario.params } : {};
      const onLocal = await local.run(scenario.flow, structuredClone(scenario.shared), options);
      expect(onLocal.status, JSON.stringify(onLocal.error)).toBe('completed');
      expect({ shared: onLocal.shared, lastAction: onLocal.lastAction }).toEqual(expected);
      for (const cluster of clusters) {
        const result = await cluster.engine!.run(scenario.flow, structuredClone(scenario.shared), options);
        expect(result.status, `${cluster.name}: ${JSON.stringify(result.error)}`).toBe('completed');
        expect({ shared: result.shared, lastAction: result.lastAction }, cluster.name).toEqual(expected);
      }
    });
  }
});
