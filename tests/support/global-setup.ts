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
  const [stopRedis, stopCluster] = await Promise.all([provideRedis(project), provideCluster(project)]);
  return async () => {
    await Promise.all([stopRedis(), stopCluster()]);
  };
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
