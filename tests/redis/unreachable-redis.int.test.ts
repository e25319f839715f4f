/**
 * A client, or a worker started with `exitOnUnreachable` (without it, a worker waits for Redis:
 * worker-waits-for-redis.int.test.ts), that cannot reach Redis fails with REDIS_UNAVAILABLE naming
 * the server, and leaves no connection retrying behind: the process that tried exits on its own.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/redis-server.js';
import { compiledModule } from '../support/compiled-module.js';

const CLIENT = fileURLToPath(new URL('./unreachable-client.ts', import.meta.url));

describe('Redis unreachable', () => {
  it('every call rejects with REDIS_UNAVAILABLE and the process exits without closing anything by hand', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`; // nothing listens there
    const reason = `cannot connect to Redis at ${url}: connect ECONNREFUSED ${url.slice('redis://'.length)}`;
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      // killed (and the test failed) if a connection keeps the process alive
      execFile(process.execPath, [compiledModule(CLIENT), url], { timeout: 60_000 }, (error, out, err) =>
        error
          ? reject(new Error(`${error.message}\nstdout: ${out}\nstderr: ${err}`, { cause: error }))
          : resolve({ stdout: out }),
      ),
    );
    expect(stdout).toBe(
      `get: REDIS_UNAVAILABLE ${reason}\nget again: REDIS_UNAVAILABLE ${reason}\nworker: REDIS_UNAVAILABLE ${reason}\n`,
    );
  });
});
