import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './redis-cluster.js';
import { startRedisServer } from './redis-server.js';

import './test-redis.js';

/**
 * Finds the Redis the integration tests use (DESIGN "Tests"): `REDIS_URL` when set; otherwise a
 * Redis container through Testcontainers when a Docker engine answers; otherwise a
 * `redis-server` started here on a free port. Each test then uses its own key prefix.
 *
 * And the Redis Cluster the suites also run on: `REDIS_CLUSTER_URLS` (node URLs, comma-separated)
 * when set, else 3 masters started here (tests/support/redis-cluster.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [stopRedis, stopCluster] = await Promise.all([
    provideRedis(project),
    provideCluster(project),
    warmClassifierCache(),
  ]);
  return async () => {
    await Promise.all([stopRedis(), stopCluster()]);
  };
}

/** The examples' spam classifier modules, as test files load them (sources) and processes (build). */
const CLASSIFIER = Object.fromEntries(
  (['src', 'dist'] as const).map((dir) => {
    const url = (name: string): string =>
      new URL(`../../packages/examples/${dir}/utils/${name}.${dir === 'src' ? 'ts' : 'js'}`, import.meta.url).href;
    const modules = { settings: 'spam-classifier-settings', cache: 'classifier-cache', classifier: 'spam-classifier' };
    return [dir, Object.fromEntries(Object.entries(modules).map(([role, name]) => [role, url(name)]))];
  }),
) as Record<'src' | 'dist', { settings: string; cache: string; classifier: string }>;

/**
 * Fills the spam classifier's cache (node_modules/.cache) before any test file starts: on a cold
 * one (a fresh checkout) every process that needed the classifier first trained its own (~12 s
 * of CPU each: a file's test process and its workers, several files at once). Two keys: the key
 * hashes the feature modules' text, `.ts` in test files, `.js` in worker and CLI processes. The
 * build's is trained in a process of its own, beside this one. Warm, only the keys are computed.
 */
async function warmClassifierCache(): Promise<void> {
  const warm = async (dir: 'src' | 'dist', train: () => Promise<void>): Promise<void> => {
    const { spamClassifierCacheKey } = (await import(CLASSIFIER[dir].settings)) as {
      spamClassifierCacheKey(): string;
    };
    const cache = (await import(CLASSIFIER[dir].cache)) as {
      classifierCacheFile(dir: string, key: string): string;
      defaultClassifierCacheDir(): string;
    };
    if (!existsSync(cache.classifierCacheFile(cache.defaultClassifierCacheDir(), spamClassifierCacheKey())))
      await train();
  };
  await Promise.all([
    warm('dist', async () => {
      const script = `await (await import(${JSON.stringify(CLASSIFIER.dist.classifier)})).getSpamClassifier()`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
      const code = await new Promise((resolve) => child.once('exit', resolve));
      if (code !== 0) throw new Error(`training the classifier of ${CLASSIFIER.dist.classifier}: exit ${String(code)}`);
    }),
    warm('src', async () => {
      const { getSpamClassifier } = (await import(CLASSIFIER.src.classifier)) as {
        getSpamClassifier(): Promise<unknown>;
      };
      await getSpamClassifier();
    }),
  ]);
}

async function provideCluster(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.REDIS_CLUSTER_URLS;
  if (given) {
    project.provide(
      'redisClusterUrls',
      given.split(',').map((url) => url.trim()),
    );
    return async () => {};
  }
  const cluster = await startRedisCluster();
  project.provide('redisClusterUrls', cluster.urls);
  return cluster.stop;
}

async function provideRedis(project: TestProject): Promise<() => Promise<void>> {
  if (process.env.REDIS_URL) {
    project.provide('redisUrl', process.env.REDIS_URL);
    return async () => {};
  }
  const container = await startContainerIfDocker();
  if (container) {
    project.provide('redisUrl', container.url);
    return container.stop;
  }
  const server = await startRedisServer();
  project.provide('redisUrl', server.url);
  return server.stop;
}

async function startContainerIfDocker(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await withTimeout(getContainerRuntimeClient(), 5000);
  } catch {
    return undefined; // no Docker engine here
  }
  const { RedisContainer } = await import('@testcontainers/redis');
  const container = await new RedisContainer('redis:7-alpine').start();
  return { url: container.getConnectionUrl(), stop: async () => void (await container.stop()) };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error('timeout')), ms).unref()),
  ]);
}
