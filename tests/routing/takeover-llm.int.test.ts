/**
 * A worker serving several queues runs one BullMQ worker per queue; its heartbeat names them all,
 * so when it dies a survivor hands back its steps on every queue it served (not only `default`),
 * at once rather than after BullMQ's 30 s lock.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisEngine } from '@queueflow/worker';
import { deletePrefix, redisUrl, testPrefix } from '../support/test-redis.js';
import { waitFor } from '../support/wait-for.js';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.js';
import { hangsOnLlm, type RoutedShared } from './routing-flows.js';

const FLOWS = fileURLToPath(new URL('./routing-flows.ts', import.meta.url));

describe('queues: a dead worker serving default and llm', () => {
  const prefix = testPrefix('takeover-llm');
  const markerDir = mkdtempSync(join(tmpdir(), 'queueflow-takeover-llm-'));
  const engine = new RedisEngine({ connection: redisUrl(), flows: [hangsOnLlm], prefix });
  let workers: WorkerProcess[] = [];

  afterAll(async () => {
    await engine.close();
    for (const worker of workers)
      if (worker.child.exitCode === null && worker.child.signalCode === null) worker.kill('SIGKILL');
    await Promise.all(workers.map((worker) => worker.exited));
    await deletePrefix(redisUrl(), prefix);
    rmSync(markerDir, { recursive: true, force: true });
  });

  const marker = (name: string): string | undefined => {
    const file = join(markerDir, name);
    return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  };

  it('has its llm step handed back by a survivor through the heartbeat', async () => {
    const options = { flows: FLOWS, redisUrl: redisUrl(), prefix, queues: ['default', 'llm'] };
    workers = await Promise.all([spawnWorker(options), spawnWorker(options)]);
    const handle = await engine.start(hangsOnLlm, { ran: [] }, { params: { markerDir } });
    const victimPid = Number(await waitFor('the llm step to start', () => marker('first')));
    const victim = workers.find((worker) => worker.pid === victimPid)!;
    const survivor = workers.find((worker) => worker !== victim)!;
    victim.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');

    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect((result.shared as unknown as RoutedShared).ran).toEqual([{ node: 'hang', pid: survivor.pid }]);
    expect(marker('again')).toBe(String(survivor.pid));
    // The survivor claimed the dead worker and handed its llm step back (BullMQ's lock, 30 s by
    // default, had not expired: the step was not taken as stalled).
    expect(survivor.output()).toMatch(new RegExp(`stopped heartbeating .* took over 1 step\\(s\\): ${handle.id}-0`));
  }, 120_000);
});
