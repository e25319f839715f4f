import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEngine, setWarningHandler, type JsonObject } from '@queueflow/runtime';
import { RedisEngine } from '@queueflow/worker';
import { scenarios, type Scenario } from '../scenarios/flows.js';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { spawnWorker, stopWorkers, type WorkerProcess } from '../support/worker-process.js';

/**
 * DESIGN "Parity": every scenario on `flow.run`, LocalEngine and RedisEngine with 1 and 3 worker
 * processes gives the same final `shared` and the same last action.
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

describe('parity: flow.run = LocalEngine = RedisEngine (1 and 3 worker processes)', () => {
  const local = new LocalEngine({ flows });
  const clusters: { name: string; prefix: string; workers: WorkerProcess[]; engine?: RedisEngine }[] = [
    { name: '1 worker', prefix: testPrefix('parity1'), workers: [] },
    { name: '3 workers', prefix: testPrefix('parity3'), workers: [] },
  ];

  beforeAll(async () => {
    setWarningHandler(() => {});
    const start = (prefix: string): Promise<WorkerProcess> =>
      spawnWorker({ flows: FLOWS, redisUrl: redisUrl(), prefix, concurrency: 4 });
    const [one, ...three] = await Promise.all([
      start(clusters[0]!.prefix),
      start(clusters[1]!.prefix),
      start(clusters[1]!.prefix),
      start(clusters[1]!.prefix),
    ]);
    clusters[0]!.workers = [one!];
    clusters[1]!.workers = three;
    for (const cluster of clusters)
      cluster.engine = new RedisEngine({ connection: redisUrl(), flows, prefix: cluster.prefix });
  }, 120_000);

  afterAll(async () => {
    setWarningHandler(null);
    await local.close();
    for (const cluster of clusters) {
      await cluster.engine?.close();
      await stopWorkers(cluster.workers);
      await deletePrefix(redisUrl(), cluster.prefix);
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
